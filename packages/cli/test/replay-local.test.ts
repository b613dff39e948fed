import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient } from "@svc/runtime";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { spawnApi, spawnWorker, type ServiceProcess } from "../../worker/test/processes.ts";
import { MAIN, TSX } from "./svc-process.ts";

// `svc runs replay --local` and `--from failure` as a person runs them, against a real API process
// and a worker process running a 5-step task that fails at step four until a flag file exists.
const CONFIG = fileURLToPath(new URL("./fixtures/replay/svc.config.ts", import.meta.url));

let te: TestEngine;
let api: ServiceProcess;
let worker: ServiceProcess;
let client: ApiClient;
let apiUrl: string;
let secretKey: string;
let scratch: string;
const file = (name: string) => join(scratch, name);
const stepsRan = (log: string) => (existsSync(file(log)) ? readFileSync(file(log), "utf8").trim().split("\n") : []);

beforeAll(async () => {
  te = await startTestEngine();
  scratch = mkdtempSync(join(tmpdir(), "svc-replay-local-"));
  apiUrl = `http://127.0.0.1:${await freePort()}`;
  secretKey = te.project.environments.dev.secretKey;
  api = spawnApi(te.db.url, Number(new URL(apiUrl).port), { SERVICE_API_URL: apiUrl });
  worker = spawnWorker(te.db.url, secretKey, CONFIG, { SERVICE_API_URL: apiUrl, STEP_LOG: file("worker.log"), FIXED_FLAG: file("fixed") });
  await Promise.all([api.ready, worker.ready]);
  client = new ApiClient({ secretKey, baseURL: apiUrl });
}, 60_000);

afterAll(async () => {
  for (const p of [api, worker]) p?.child.kill("SIGKILL");
  await Promise.all([api?.exited, worker?.exited]);
  await te?.close();
  rmSync(scratch, { recursive: true, force: true });
});

function svc(args: string[], extra: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, SERVICE_API_URL: apiUrl, SERVICE_SECRET_KEY: secretKey, SVC_RUNTIME_FILE: file("none.json"), ...extra };
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", TSX, MAIN, ...args], { cwd: scratch, env, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

async function finished(id: string) {
  for (;;) {
    const run = await client.runs.retrieve(id);
    if (run.isCompleted || run.isFailed) return run;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("svc runs replay --local and --from failure", () => {
  it("steps through a failed run here without writing, then resumes it from its failure", async () => {
    const { id } = await client.tasks.trigger("cli-five-steps", { n: 2 });
    expect((await finished(id)).status).toBe("FAILED");
    expect(stepsRan("worker.log")).toEqual(["one", "two", "three", "four"]);
    const ledgerBefore = await client.runs.ledger(id);

    // Still broken here: the recorded steps are not run, step four runs and throws.
    const broken = await svc(["runs", "replay", id, "--local", "--config", CONFIG], { STEP_LOG: file("local.log"), FIXED_FLAG: file("fixed") });
    expect(broken.code, broken.stderr).toBe(1);
    expect(broken.stdout).toBe(
      [
        `Replayed ${id} (task cli-five-steps) in this process against its ledger (3 recorded entries); nothing was written`,
        `  #0 step "one": recorded, not run`,
        `  #1 step "two": recorded, not run`,
        `  #2 step "three": recorded, not run`,
        `  #3 step "four": ran here, threw Error: step four broke`,
        `The task threw Error: step four broke`,
        "",
      ].join("\n"),
    );
    expect(stepsRan("local.log")).toEqual(["four"]);

    // Fixed: step four returns, and the local replay stops at the next step, which has no record.
    writeFileSync(file("fixed"), "");
    const fixed = await svc(["runs", "replay", id, "--local", "--config", CONFIG, "--json"], { STEP_LOG: file("local.log"), FIXED_FLAG: file("fixed") });
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(JSON.parse(fixed.stdout)).toEqual({
      runId: id,
      taskIdentifier: "cli-five-steps",
      events: [
        { type: "replayed", stepKey: "#0", kind: "step", target: "one" },
        { type: "replayed", stepKey: "#1", kind: "step", target: "two" },
        { type: "replayed", stepKey: "#2", kind: "step", target: "three" },
        { type: "executed", stepKey: "#3", name: "four", value: "fixed" },
      ],
      end: { kind: "stopped", stepKey: "#4", reason: `step "five" comes after step #3 ("four"), the one that ran here: a local replay runs one unrecorded step` },
    });
    expect(stepsRan("local.log")).toEqual(["four", "four"]);
    // Nothing was written: the run and its ledger are as they were.
    expect(await client.runs.ledger(id)).toEqual(ledgerBefore);
    expect((await client.runs.retrieve(id)).status).toBe("FAILED");

    // Resumed from its failure on the (now fixed) worker: steps one to three are not run again.
    const resumed = await svc(["runs", "replay", id, "--from", "failure", "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const { id: newId, replayOf, from } = JSON.parse(resumed.stdout);
    expect({ replayOf, from }).toEqual({ replayOf: id, from: "failure" });
    const done = await finished(newId);
    expect(done.status).toBe("COMPLETED");
    expect(done.output).toEqual({ one: "one", oneAtIsDate: true, two: "two", three: 6, four: "fixed", five: "five" });
    expect(stepsRan("worker.log")).toEqual(["one", "two", "three", "four", "four", "five"]);

    const refused = await svc(["runs", "replay", newId, "--from", "failure"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`is COMPLETED: only a run that ended FAILED, CRASHED, SYSTEM_FAILURE, TIMED_OUT can be replayed from its failure`);
    const misuse = await svc(["runs", "replay", id, "--from", "middle"]);
    expect(misuse.code).toBe(2);
    expect(misuse.stderr).toMatch(/--from must be start or failure, not "middle"/);
  }, 60_000);
});
