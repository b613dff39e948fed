import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { spawnApi, spawnWorker, type ServiceProcess } from "../../worker/test/processes.ts";
import { runSvc } from "../src/svc.ts";
import { MAIN, TSX } from "./svc-process.ts";

// `svc runs …` and `svc tokens complete` as a person runs them: separate processes against a real
// API process and a worker process with the example tasks of examples/hello.
const EXAMPLE_CONFIG = fileURLToPath(new URL("../../../examples/hello/svc.config.ts", import.meta.url));

let te: TestEngine;
let api: ServiceProcess;
let worker: ServiceProcess;
let apiUrl: string;
let secretKey: string;
let scratch: string;

beforeAll(async () => {
  te = await startTestEngine();
  apiUrl = `http://127.0.0.1:${await freePort()}`;
  secretKey = te.project.environments.dev.secretKey;
  api = spawnApi(te.db.url, Number(new URL(apiUrl).port), { SERVICE_API_URL: apiUrl });
  worker = spawnWorker(te.db.url, secretKey, EXAMPLE_CONFIG, { SERVICE_API_URL: apiUrl });
  await Promise.all([api.ready, worker.ready]);
  scratch = mkdtempSync(join(tmpdir(), "svc-api-commands-"));
}, 60_000);

afterAll(async () => {
  for (const p of [api, worker]) p?.child.kill("SIGKILL");
  await Promise.all([api?.exited, worker?.exited]);
  await te?.close();
  rmSync(scratch, { recursive: true, force: true });
});

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
  json(): any;
}

/** The environment a terminal has after `export SERVICE_API_URL=… SERVICE_SECRET_KEY=…`, with no runtime file around. */
function terminalEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: Record<string, string | undefined> = { ...process.env, SERVICE_API_URL: apiUrl, SERVICE_SECRET_KEY: secretKey, SVC_RUNTIME_FILE: join(scratch, "none.json"), ...extra };
  delete env.SERVICE_PREVIEW_BRANCH;
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv;
}

/** `svc …` in a process of its own. */
function svc(args: string[], env = terminalEnv(), stdin?: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ["--import", TSX, MAIN, ...args], { cwd: scratch, env, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) });
    });
    if (stdin !== undefined) child.stdin!.end(stdin);
    else child.stdin!.end();
  });
}

/** The same command in this process: for bad input, which needs no process of its own to be checked. */
async function svcHere(args: string[], env = terminalEnv()): Promise<Ran> {
  let stdout = "";
  let stderr = "";
  const code = (await runSvc(args, env, { stdout: (t) => (stdout += t + "\n"), stderr: (t) => (stderr += t + "\n") })) as number;
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

/** Asks `svc runs show --json` until `predicate` holds for the run. */
async function runUntil(runId: string, predicate: (run: any) => boolean): Promise<any> {
  for (;;) {
    const shown = await svcHere(["runs", "show", runId, "--json"]);
    expect(shown.code, shown.stderr).toBe(0);
    const run = shown.json();
    if (predicate(run)) return run;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("svc runs trigger, show and list", () => {
  it("triggers with a payload and tags, waits for the run, and shows it as text and as JSON", async () => {
    const triggered = await svc(["runs", "trigger", "hello-world", "--payload", '{"name":"Ada"}', "--tag", "cli,first", "--json"]);
    expect(triggered.code, triggered.stderr).toBe(0);
    const { id, isCached } = triggered.json();
    expect(id).toMatch(/^run_/);
    expect(isCached).toBe(false);

    const waited = await svc(["runs", "trigger", "hello-world", "--payload", '{"name":"Grace"}', "--tag", "cli", "--wait"]);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toMatch(/^Triggered hello-world: run_\w+\n/);
    expect(waited.stdout).toMatch(/^status\s+COMPLETED$/m);
    expect(waited.stdout).toMatch(/"greeting": "Hello, Grace!"/);

    const run = await runUntil(id, (r) => r.status === "COMPLETED");
    expect(run).toMatchObject({ id, taskIdentifier: "hello-world", payload: { name: "Ada" }, output: { greeting: "Hello, Ada!" }, tags: ["cli", "first"] });
    const shown = await svc(["runs", "show", id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^id\\s+${id}$`, "m"));
    expect(shown.stdout).toMatch(/^task\s+hello-world$/m);
    expect(shown.stdout).toMatch(/^tags\s+cli, first$/m);
    expect(shown.stdout).toMatch(/payload:\n {2}\{\n {4}"name": "Ada"\n {2}\}/);
  });

  it("lists with the API's filters: task, tag, status, limit with a cursor to the next page", async () => {
    const tagged = await svc(["runs", "list", "--task", "hello-world", "--tag", "cli", "--json"]);
    expect(tagged.code, tagged.stderr).toBe(0);
    const listed = tagged.json();
    expect(listed.data.length).toBe(2);
    expect(listed.data.every((r: any) => r.taskIdentifier === "hello-world" && r.tags.includes("cli"))).toBe(true);

    expect((await svcHere(["runs", "list", "--tag", "cli", "--status", "FAILED,CRASHED", "--json"])).json().data).toEqual([]);
    expect((await svcHere(["runs", "list", "--tag", "cli", "--status", "completed", "--json"])).json().data).toHaveLength(2);
    expect((await svcHere(["runs", "list", "--tag", "first", "--period", "1h", "--json"])).json().data).toHaveLength(1);

    const page = await svc(["runs", "list", "--tag", "cli", "--limit", "1"]);
    expect(page.code).toBe(0);
    const [header, row, more] = page.stdout.trim().split("\n");
    expect(header).toMatch(/^ID\s+TASK\s+STATUS\s+CREATED\s+DURATION\s+TAGS$/);
    expect(row).toMatch(/^run_\w+\s+hello-world\s+COMPLETED\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+\S+\s+cli/);
    const cursor = /^more: svc runs list … --after (\S+)$/.exec(more!)?.[1];
    expect(cursor).toBeDefined();
    const next = await svcHere(["runs", "list", "--tag", "cli", "--limit", "1", "--after", cursor!, "--json"]);
    expect(next.json().data).toHaveLength(1);
    expect(next.json().data[0].id).not.toBe(row!.split(/\s+/)[0]);

    expect((await svcHere(["runs", "list", "--tag", "no-such-tag"])).stdout).toBe("no runs match\n");
    expect((await svcHere(["runs", "list", "--tag", "cli", "--no-test", "--json"])).json().data).toHaveLength(2);
    expect((await svcHere(["runs", "list", "--tag", "cli", "--test", "--json"])).json().data).toHaveLength(0);
    // --bulk-action is filter[bulkAction]: an action that touched nothing lists nothing; a run id is no action id.
    expect((await svcHere(["runs", "list", "--bulk-action", "bulk_nosuchaction", "--json"])).json().data).toEqual([]);
    const notAnAction = await svcHere(["runs", "list", "--bulk-action", "run_abc"]);
    expect(notAnAction.code).not.toBe(0);
    expect(notAnAction.stderr).toMatch(/filter\[bulkAction\].*\(HTTP 400\)/);
  });

  it("reads the payload from a file or standard input, metadata and options too", async () => {
    writeFileSync(join(scratch, "payload.json"), '{"name":"File"}');
    const fromFile = await svc(["runs", "trigger", "hello-world", "--payload-file", join(scratch, "payload.json"), "--metadata", '{"source":"cli"}', "--idempotency-key", "cli-once", "--json"]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    const again = await svcHere(["runs", "trigger", "hello-world", "--payload-file", join(scratch, "payload.json"), "--idempotency-key", "cli-once"]);
    expect(again.stdout).toMatch(new RegExp(`^An existing run of hello-world: ${fromFile.json().id} \\(its idempotency key matched\\)`));
    expect(await runUntil(fromFile.json().id, (r) => r.status === "COMPLETED")).toMatchObject({ payload: { name: "File" }, metadata: { source: "cli" } });

    const fromStdin = await svc(["runs", "trigger", "hello-world", "--payload-file", "-", "--json"], terminalEnv(), '{"name":"Stdin"}');
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    expect(await runUntil(fromStdin.json().id, (r) => r.status === "COMPLETED")).toMatchObject({ payload: { name: "Stdin" } });
  });
});

describe("svc runs cancel and replay", () => {
  it("cancels a delayed run, says so when the run had already finished, and replays a run", async () => {
    const delayed = (await svcHere(["runs", "trigger", "hello-world", "--payload", '{"name":"Later"}', "--delay", "1h", "--json"])).json();
    expect((await runUntil(delayed.id, () => true)).status).toBe("DELAYED");
    const canceled = await svc(["runs", "cancel", delayed.id]);
    expect(canceled.code, canceled.stderr).toBe(0);
    expect(canceled.stdout).toBe(`Canceled ${delayed.id}\n`);
    const again = await svcHere(["runs", "cancel", delayed.id, "--json"]);
    expect(again.json()).toEqual({ id: delayed.id, status: "CANCELED", changed: false });
    expect((await svcHere(["runs", "cancel", delayed.id])).stdout).toMatch(/had already finished \(CANCELED\); nothing changed/);

    const replayed = await svc(["runs", "replay", delayed.id, "--json"]);
    expect(replayed.code, replayed.stderr).toBe(0);
    const { id, replayOf } = replayed.json();
    expect(replayOf).toBe(delayed.id);
    expect(await runUntil(id, (r) => r.status === "COMPLETED")).toMatchObject({ taskIdentifier: "hello-world", payload: { name: "Later" }, output: { greeting: "Hello, Later!" } });
    expect((await svcHere(["runs", "replay", delayed.id])).stdout).toMatch(new RegExp(`^Replayed ${delayed.id} as run_\\w+\\n {2}svc runs show run_\\w+\\n$`));
  });
});

describe("svc tokens complete", () => {
  it("completes the token a run waits on; the run resumes with the output", async () => {
    const { id } = (await svcHere(["runs", "trigger", "approval", "--payload", '{"amount":42}', "--json"])).json();
    const waiting = await runUntil(id, (r) => r.waitingFor?.length > 0);
    const token = waiting.waitingFor[0];
    expect(token.type).toBe("MANUAL");
    // The text of a waiting run says how to complete its token.
    expect((await svcHere(["runs", "show", id])).stdout).toMatch(new RegExp(`^waits for\\s+token ${token.id} \\(times out `, "m"));
    expect((await svcHere(["runs", "show", id])).stdout).toContain(`svc tokens complete ${token.id} --output '<json>'`);

    const completed = await svc(["tokens", "complete", token.id, "--output", '{"approved":true}']);
    expect(completed.code, completed.stderr).toBe(0);
    expect(completed.stdout).toBe(`Completed ${token.id}: the runs waiting on it resume\n`);
    expect(await runUntil(id, (r) => r.status === "COMPLETED")).toMatchObject({ output: { status: "approved", amount: 42 } });
  });
});

describe("where the commands send their requests", () => {
  it("without SERVICE_API_URL and SERVICE_SECRET_KEY: the API and dev key svc dev wrote to .svc/runtime.json", async () => {
    const state = join(scratch, ".svc");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(state, { recursive: true });
    writeFileSync(join(state, "runtime.json"), JSON.stringify({ databaseUrl: te.db.url, encryptionKey: "unused-here-0123456789", apiUrl, secretKey }));
    const env = terminalEnv({ SERVICE_API_URL: undefined, SERVICE_SECRET_KEY: undefined, SVC_RUNTIME_FILE: undefined, SVC_STATE_DIR: undefined });
    const listed = await svc(["runs", "list", "--tag", "cli", "--json"], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json().data).toHaveLength(2);
    rmSync(state, { recursive: true });
  });

  it("says what is missing or wrong, exit 1: no key, an API that does not answer, a wrong key, an unknown run", async () => {
    const noKey = await svcHere(["runs", "list"], terminalEnv({ SERVICE_SECRET_KEY: undefined }));
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/^error: SERVICE_SECRET_KEY is not set, and no .*none\.json holds svc dev's key: set it to an environment's secret key \(svc keys show prints them\)/);

    const down = await svc(["runs", "list"], terminalEnv({ SERVICE_API_URL: `http://127.0.0.1:${await freePort()}` }));
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^error: cannot reach svc's API at http:\/\/127\.0\.0\.1:\d+ .*is svc dev \(or svc api\) running\?/);
    expect(down.stderr).not.toMatch(/\n\s+at /);

    const wrongKey = await svcHere(["runs", "list"], terminalEnv({ SERVICE_SECRET_KEY: "svc_dev_notakey" }));
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/^error: .* \(HTTP 401\)/);

    const missing = await svc(["runs", "show", "run_doesnotexist", "--json"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("error: Run not found (HTTP 404)\n");
    expect(missing.json()).toEqual({ error: "Run not found (HTTP 404)" });
    expect((await svcHere(["tokens", "complete", "waitpoint_doesnotexist"])).code).toBe(1);

    const pat = await svcHere(["runs", "list"], terminalEnv({ SERVICE_SECRET_KEY: "svc_pat_abc" }));
    expect(pat.code).toBe(2);
    expect(pat.stderr).toMatch(/a personal access token lists the runs of a project: pass --project <ref>/);
  });
});

describe("bad input: exit 2, the problem and the usage, and no request", () => {
  it.each([
    [["runs", "trigger"], /^error: missing <task id>\nusage: svc runs trigger <task id> \[--payload <json>\]/],
    [["runs", "trigger", "hello-world", "--payload", "{name: Ada}"], /^error: --payload is not JSON \(.*\); a string is written with its quotes/],
    [["runs", "trigger", "hello-world", "--payload", "1", "--payload-file", "x.json"], /^error: pass --payload or --payload-file, not both/],
    [["runs", "trigger", "hello-world", "--payload-file", "/nonexistent/p.json"], /^error: --payload-file \/nonexistent\/p\.json: no such file/],
    [["runs", "trigger", "hello-world", "--metadata", "[1]"], /^error: --metadata must be a JSON object/],
    [["runs", "trigger", "hello-world", "--max-attempts", "0"], /^error: --max-attempts must be a whole number from 1 to 100, not "0"/],
    [["runs", "trigger", "hello-world", "--frobnicate"], /^error: Unknown option '--frobnicate'/],
    [["runs", "list", "--status", "DONE"], /^error: unknown status DONE; statuses: PENDING_VERSION, QUEUED/],
    [["runs", "list", "--limit", "500"], /^error: --limit must be a whole number from 1 to 100, not "500"/],
    [["runs", "list", "--from", "yesterday"], /^error: --from must be a date-time such as 2025-06-01T12:00:00Z, not "yesterday"/],
    [["runs", "list", "--env", "prod"], /^error: --env needs --project/],
    [["runs", "list", "--no-limit"], /^error: Unknown option '--no-limit'/],
    [["runs", "show"], /^error: missing <run id>/],
    [["runs", "show", "run_a", "run_b"], /^error: unexpected argument "run_b"/],
    [["runs", "show", ""], /^error: <run id> is empty/],
    [["runs", "frobnicate"], /^error: unknown command "runs frobnicate"; svc runs has: list, show, trigger, cancel, replay/],
    [["tokens", "complete", "waitpoint_x", "--output", "yes please"], /^error: --output is not JSON/],
  ])("svc %j", async (args, message) => {
    // An API that does not exist: a request would fail with exit 1, not 2.
    const ran = await svcHere(args as string[], terminalEnv({ SERVICE_API_URL: "http://127.0.0.1:9" }));
    expect(ran.stderr).toMatch(message);
    expect(ran.code).toBe(2);
  });

  it("an argument only the API can judge (a period) is bad usage too, in the API's words", async () => {
    const ran = await svcHere(["runs", "list", "--period", "soon", "--json"]);
    expect(ran.code).toBe(2);
    expect(ran.stderr).toMatch(/^error: .*period.* \(HTTP 400\)\nusage: svc runs list/);
    expect(ran.json().error).toMatch(/\(HTTP 400\)$/);
  });
});

describe("help", () => {
  it("svc runs --help, svc tokens --help and each command's --help", async () => {
    for (const group of ["runs", "tokens"]) {
      const ran = await svcHere([group, "--help"]);
      expect(ran.code).toBe(0);
      expect(ran.stdout).toMatch(new RegExp(`svc ${group} \\w+`));
    }
    expect((await svcHere(["runs"])).code).toBe(2);
    for (const command of [["runs", "list"], ["runs", "show"], ["runs", "trigger"], ["runs", "cancel"], ["runs", "replay"], ["tokens", "complete"]]) {
      const ran = await svcHere([...command, "--help"], terminalEnv({ SERVICE_SECRET_KEY: undefined }));
      expect(ran.code, command.join(" ")).toBe(0);
      expect(ran.stdout).toMatch(new RegExp(`^usage: svc ${command.join(" ")}`));
      expect(ran.stdout).toMatch(/--json/);
    }
    const spawned = await svc(["runs", "trigger", "--help"]);
    expect(spawned.code).toBe(0);
    expect(spawned.stdout).toMatch(/--payload <json>\s+the payload, as JSON/);
    expect(spawned.stdout).toMatch(/examples:\n {2}svc runs trigger hello-world --payload '\{"name":"Ada"\}'/);
  });
});
