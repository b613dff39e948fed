// Loaded environment variables are reused for envVarsTtlMs of the engine's clock: a test moves
// time instead of waiting, and the values reach the TaskEnv it was given, not necessarily process.env.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEnvironmentVariable, FakeClock, updateEnvironmentVariable } from "@svc/runtime/engine";
import { envVarsAndSchedules } from "../src/env-vars-and-schedules.ts";
import { TaskEnv } from "../src/task-env.ts";
import { startTestEngine, type TestEngine } from "./harness.ts";

const clock = new FakeClock(new Date("2001-02-03T04:05:06Z"));
let te: TestEngine;

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => {
  await te?.close();
});

describe("reuse of loaded environment variables", () => {
  it("re-reads them once the engine clock passed the reuse time", async () => {
    const target: Record<string, string | undefined> = {};
    const { prepareEnvironment } = envVarsAndSchedules(te.engine, te.env, new TaskEnv(target), { envVarsTtlMs: 2000 });
    await createEnvironmentVariable(te.db.pool, te.engine.secrets, te.env, { name: "SVC_REUSE_TEST", value: "one" }, clock.now());
    await prepareEnvironment!();
    expect(target.SVC_REUSE_TEST).toBe("one");
    await updateEnvironmentVariable(te.db.pool, te.engine.secrets, te.env, "SVC_REUSE_TEST", "two", clock.now());
    clock.advance(1999);
    await prepareEnvironment!();
    expect(target.SVC_REUSE_TEST).toBe("one");
    clock.advance(1);
    await prepareEnvironment!();
    expect(target.SVC_REUSE_TEST).toBe("two");
    expect(process.env.SVC_REUSE_TEST).toBeUndefined();
  });
});
