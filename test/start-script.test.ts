import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../scripts/embedded-postgres.ts";
import { PostgresServer } from "../packages/cli/src/dev/postgres-server.ts";

// `pnpm start` as a person runs it in a terminal: a process group of its own (the terminal's job),
// stopped with Ctrl-C (SIGINT to the whole group) or with SIGTERM to the pnpm process alone.
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const FIXTURE = join(ROOT, "packages/worker/test/fixtures/outage/svc.config.ts");
let state: string;

beforeAll(() => {
  state = mkdtempSync(join(tmpdir(), "svc-start-"));
});
afterAll(() => {
  rmSync(state, { recursive: true, force: true });
});

interface Started {
  pnpm: ChildProcess;
  port: number;
  key: string;
  output: () => string;
  exited: Promise<void>;
}

async function start(): Promise<Started> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_STATE_DIR: state, PORT: String(port), LOG_LEVEL: "info" };
  delete env.DATABASE_URL;
  // pnpm itself, as run from a terminal (npm_execpath is pnpm's own script when tests run under pnpm).
  const pnpm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ["pnpm"];
  const child = spawn(pnpm[0]!, [...pnpm.slice(1), "start", "--config", FIXTURE], { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  await until(() => out.includes("svc worker started") && out.includes("svc api listening"), () => out, 90_000);
  const key = /dev key\s+(svc_dev_\S+)/.exec(out)![1]!;
  return { pnpm: child, port, key, output: () => out, exited };
}

async function until(predicate: () => boolean | Promise<boolean>, explain: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out; output:\n${explain().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function api(s: Started, method: string, path: string, body?: unknown) {
  const response = await fetch(`http://127.0.0.1:${s.port}${path}`, {
    method,
    headers: { authorization: `Bearer ${s.key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response.json() as Promise<any>;
}

const postgresRunning = () => existsSync(join(state, "pg", "postmaster.pid"));
const apiAnswers = (s: Started) => fetch(`http://127.0.0.1:${s.port}/healthz`).then(() => true, () => false);

/** Everything `pnpm start` started has stopped: the API, the worker and the embedded Postgres. */
async function allStopped(s: Started) {
  await until(async () => !postgresRunning() && !(await apiAnswers(s)) && s.output().includes("worker stopped"), s.output, 60_000);
}

/** The run's row and attempts, read from the embedded Postgres's data once it has stopped. */
async function runInDatabase(runId: string) {
  const port = Number(readFileSync(join(state, "pg-port"), "utf8"));
  const server = await PostgresServer.open(join(state, "pg"), port, { password: "postgres" });
  await server.start();
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    const run = (await client.query(`SELECT status, attempt_number FROM runs WHERE id = $1`, [runId])).rows[0];
    const attempts = (await client.query(`SELECT number, status FROM run_attempts WHERE run_id = $1 ORDER BY number`, [runId])).rows;
    return { run, attempts };
  } finally {
    await client.end();
    await server.stop("fast");
  }
}

describe("pnpm start", () => {
  it("one Ctrl-C lets the run in flight finish, then stops the API, the worker and the embedded Postgres", async () => {
    const s = await start();
    const { id } = await api(s, "POST", "/api/v1/tasks/outage-quick/trigger", { payload: { n: 1, holdMs: 2500 } });
    await until(async () => (await api(s, "GET", `/api/v3/runs/${id}`)).status === "EXECUTING", s.output);
    process.kill(-s.pnpm.pid!, "SIGINT");
    await allStopped(s);
    expect(s.output()).not.toContain("second signal");
    // Finished by the same attempt: not cut off and re-run as a new one.
    const { run, attempts } = await runInDatabase(id);
    expect(run).toEqual({ status: "COMPLETED", attempt_number: 1 });
    expect(attempts).toEqual([{ number: 1, status: "COMPLETED" }]);
  }, 120_000);

  it("SIGTERM to the pnpm process stops the API, the worker and the embedded Postgres", async () => {
    const s = await start();
    s.pnpm.kill("SIGTERM");
    await allStopped(s);
  }, 120_000);

  it("a second Ctrl-C stops at once, without waiting for the run in flight", async () => {
    const s = await start();
    const { id } = await api(s, "POST", "/api/v1/tasks/outage-quick/trigger", { payload: { n: 2, holdMs: 600_000 } });
    await until(async () => (await api(s, "GET", `/api/v3/runs/${id}`)).status === "EXECUTING", s.output);
    process.kill(-s.pnpm.pid!, "SIGINT");
    await until(() => s.output().includes("draining in-flight runs"), s.output);
    process.kill(-s.pnpm.pid!, "SIGINT");
    await until(async () => !postgresRunning() && !(await apiAnswers(s)), s.output, 20_000);
    expect(s.output()).toContain("second signal: exiting now");
    const { run } = await runInDatabase(id);
    expect(run.status).toBe("EXECUTING");
  }, 120_000);
});
