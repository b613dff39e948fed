// Environment variables of the worker's environment reach task code through process.env.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEnvironmentVariable, deleteEnvironmentVariable, triggerRun, updateEnvironmentVariable } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { envVarsAndSchedules } from "../src/env-vars-and-schedules.ts";
import { TaskEnv } from "../src/task-env.ts";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const NAMES = ["SVC_TEST_GREETING", "SVC_TEST_API_TOKEN", "SVC_TEST_BROKEN"];

const readsEnv = task({
  id: "reads-env",
  run: async () => ({ greeting: process.env.SVC_TEST_GREETING ?? null, token: process.env.SVC_TEST_API_TOKEN ?? null }),
});
const noRetry = task({ id: "reads-env-once", retry: { maxAttempts: 1 }, run: async () => process.env.SVC_TEST_GREETING ?? null });

async function outputOf(taskId: string) {
  const { id } = await triggerRun(te.engine, te.env, taskId, {});
  const status = await eventually(async () => finished.get(id));
  return { id, status, output: JSON.parse((await getRunRow(te, id)).output ?? "null")?.json };
}
const finished = new Map<string, string>();

beforeAll(async () => {
  te = await startTestEngine();
  for (const name of NAMES) delete process.env[name];
  // The harness wires envVarsAndSchedules already; here without its 2 s reuse of loaded values,
  // so each run sees the variables as they are when it starts.
  tw = await startTestWorker(te, [readsEnv, noRetry], envVarsAndSchedules(te.engine, te.env, new TaskEnv(process.env), { envVarsTtlMs: 0 }));
  tw.worker.events.on("runFinished", (e) => finished.set(e.runId, e.status));
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
  for (const name of NAMES) delete process.env[name];
});

describe("environment variables in runs", () => {
  it("puts a variable created for the dev environment into process.env inside a run, secrets in the clear", async () => {
    const now = te.engine.clock.now();
    await createEnvironmentVariable(te.db.pool, te.engine.secrets, te.env, { name: "SVC_TEST_GREETING", value: "hello from dev" }, now);
    await createEnvironmentVariable(te.db.pool, te.engine.secrets, te.env, { name: "SVC_TEST_API_TOKEN", value: "s3cret", isSecret: true }, now);
    // The test process does not have them; only the worker puts them there for its runs.
    expect(process.env.SVC_TEST_GREETING).toBeUndefined();
    const run = await outputOf("reads-env");
    expect(run.status).toBe("COMPLETED");
    expect(run.output).toEqual({ greeting: "hello from dev", token: "s3cret" });
  });

  it("does not give a run the variables of another environment", async () => {
    const prod = { ...te.env, id: te.project.environments.prod.id, parentEnvironmentId: null };
    await createEnvironmentVariable(te.db.pool, te.engine.secrets, prod, { name: "SVC_TEST_GREETING", value: "hello from prod" }, te.engine.clock.now());
    expect((await outputOf("reads-env")).output.greeting).toBe("hello from dev");
  });

  it("applies an updated value and removes a deleted variable for the runs after the change", async () => {
    await updateEnvironmentVariable(te.db.pool, te.engine.secrets, te.env, "SVC_TEST_GREETING", "changed", te.engine.clock.now());
    await deleteEnvironmentVariable(te.db.pool, te.env, "SVC_TEST_API_TOKEN");
    expect((await outputOf("reads-env")).output).toEqual({ greeting: "changed", token: null });
  });

  it("fails a run whose variables cannot be decrypted instead of leaving it EXECUTING", async () => {
    await te.db.pool.query(
      `INSERT INTO environment_variables (environment_id, name, value_encrypted, is_secret, created_at, updated_at) VALUES ($1, 'SVC_TEST_BROKEN', 'not-a-sealed-value', false, now(), now())`,
      [te.env.id],
    );
    const run = await outputOf("reads-env-once");
    expect(run.status).toBe("FAILED");
    const row = await getRunRow(te, run.id);
    expect(row.status).toBe("FAILED");
    expect(row.error).toMatchObject({ message: expect.stringMatching(/environment variables/i) });
    await te.db.pool.query(`DELETE FROM environment_variables WHERE name = 'SVC_TEST_BROKEN'`);
  });
});
