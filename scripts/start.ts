// `pnpm start`: svc on this machine with nothing to set up. Uses DATABASE_URL when set, otherwise
// an embedded Postgres whose data stays in .svc/pg between runs; creates the default project on
// first start and prints its keys; then runs the API and a worker with the example tasks.
//
// Stopping: Ctrl-C (or SIGTERM to this process) drains: the worker finishes the runs in flight,
// then the API and the worker exit, then the embedded Postgres stops. A second Ctrl-C stops
// everything at once. The children and Postgres run in process groups of their own, so that the
// terminal's Ctrl-C reaches this process alone and each child gets exactly one signal from it.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createPool, migrate, withTransaction } from "../packages/runtime/src/db/index.ts";
import { ensureDefaultProject, SecretBox, systemClock } from "../packages/runtime/src/engine/index.ts";
import { PostgresServer } from "./postgres-server.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const STATE = process.env.SVC_STATE_DIR ?? `${ROOT}.svc`;
mkdirSync(STATE, { recursive: true });

function persisted(file: string, make: () => string): string {
  const path = `${STATE}/${file}`;
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  const value = make();
  writeFileSync(path, value + "\n", { mode: 0o600 });
  return value;
}

const port = Number(process.env.PORT ?? 3030);
const encryptionKey = process.env.SVC_ENCRYPTION_KEY ?? persisted("encryption-key", () => randomBytes(32).toString("base64url"));
let databaseUrl = process.env.DATABASE_URL;
let stopDatabase: (() => Promise<void>) | undefined;
if (!databaseUrl) {
  const pgPort = Number(persisted("pg-port", () => String(54_000 + Math.floor(Math.random() * 900))));
  const server = await PostgresServer.open(`${STATE}/pg`, pgPort, { password: "postgres", settings: { max_connections: "300" } });
  // One left running by an earlier run that was killed outright is used as it is.
  if (!(await server.running())) await server.start();
  databaseUrl = server.url;
  stopDatabase = () => server.stop("fast");
  console.log(`embedded Postgres on 127.0.0.1:${pgPort} (data in ${STATE}/pg)`);
}
// The operator CLI (`pnpm svc …`) finds the database and key here when DATABASE_URL is not set.
writeFileSync(`${STATE}/runtime.json`, JSON.stringify({ databaseUrl, encryptionKey }, null, 2) + "\n", { mode: 0o600 });

const pool = createPool(databaseUrl, { max: 2, onError: (error) => console.error(`database connection: ${error.message}`) });
await migrate(pool);
const project = await withTransaction(pool, (tx) => ensureDefaultProject(tx, new SecretBox(encryptionKey), systemClock.now()));
await pool.end();

const apiUrl = process.env.SERVICE_API_URL ?? `http://localhost:${port}`;
console.log(`
svc is starting
  API           ${apiUrl}   (OpenAPI: ${apiUrl}/api/openapi.json)
  project ref   ${project.projectRef}
  dev key       ${project.environments.dev.secretKey}

try it:
  curl -s -X POST ${apiUrl}/api/v1/tasks/hello-world/trigger \\
    -H "Authorization: Bearer ${project.environments.dev.secretKey}" \\
    -H "Content-Type: application/json" -d '{"payload":{"name":"Ada"}}'
  curl -s ${apiUrl}/api/v3/runs/<run id> -H "Authorization: Bearer ${project.environments.dev.secretKey}"

all keys: pnpm svc keys show --project ${project.projectRef}
`);

const common = { ...process.env, DATABASE_URL: databaseUrl, SVC_ENCRYPTION_KEY: encryptionKey, SERVICE_API_URL: apiUrl };
const children: ChildProcess[] = [];
function run(name: string, entry: string, env: NodeJS.ProcessEnv) {
  // A process group of its own: the terminal's Ctrl-C is not delivered to it, only our SIGTERM.
  const child = spawn(process.execPath, ["--import", "tsx", entry], { cwd: ROOT, env, stdio: "inherit", detached: true });
  child.on("exit", (code, signal) => {
    if (!stopping) {
      console.error(`${name} exited (${code ?? signal}); stopping svc`);
      void stop(1);
    }
  });
  children.push(child);
}
run("api", "packages/api/src/main.ts", { ...common, PORT: String(port) });
run("worker", "packages/worker/src/main.ts", {
  ...common,
  SERVICE_SECRET_KEY: process.env.SERVICE_SECRET_KEY ?? project.environments.dev.secretKey,
  SVC_CONFIG: process.env.SVC_CONFIG ?? "examples/hello/svc.config.ts",
});

let stopping = false;
/** Asks every child to drain (one SIGTERM each), waits for them to exit, then stops Postgres. */
async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  const exited = children.map((c) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once("exit", () => resolve()))));
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(exited);
  await stopDatabase?.().catch((error: unknown) => console.error(`could not stop the embedded Postgres: ${(error as Error).message}`));
  process.exit(code);
}
let signals = 0;
function onSignal() {
  if (++signals === 1) {
    console.log("\nstopping: letting the runs in flight finish (Ctrl-C again to stop at once)");
    void stop();
    return;
  }
  // A second signal is passed on: each child takes it as "stop now".
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
}
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);
watchStarter(() => void stop());

/**
 * Calls `gone` once whoever started this process has exited. `pnpm start` does not pass a SIGTERM
 * on: it kills the shell it ran us in and exits, which leaves us running. Whoever started us is
 * our parent, or the leader of our process group (pnpm, or the terminal's job); when either is
 * gone, we stop as if signalled (a drain, never the immediate stop of a second Ctrl-C).
 */
function watchStarter(gone: () => void) {
  const parent = process.ppid;
  const leader = processGroupLeader();
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "EPERM";
    }
  };
  const timer = setInterval(() => {
    if (process.ppid !== parent || (leader !== null && !alive(leader))) {
      clearInterval(timer);
      gone();
    }
  }, 500);
  timer.unref();
}

/** Our process group's id (its leader's pid), from /proc on Linux, else from ps; null if neither answers. */
function processGroupLeader(): number | null {
  try {
    // /proc/self/stat: "pid (comm) state ppid pgrp …"; comm may contain spaces, so split after ")".
    const fields = readFileSync("/proc/self/stat", "utf8").split(")").pop()!.trim().split(" ");
    return Number(fields[2]);
  } catch {
    try {
      return Number(execFileSync("ps", ["-o", "pgid=", "-p", String(process.pid)]).toString().trim()) || null;
    } catch {
      return null;
    }
  }
}
