// Step names and wait keys are stored as text: Postgres keeps half a surrogate pair (a string cut
// in the middle of an emoji) as U+FFFD. A replay must still recognise its own steps.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { step, task, wait } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
let stepCalls = 0;

// What `${label}`.slice(0, n) gives when the cut falls inside an emoji.
const cutName = "report 😀".slice(0, 8);
const cutNames = task({
  id: "cut-names",
  retry: { maxAttempts: 1 },
  run: async (payload: { token: string }) => {
    const value = await step.run(cutName, () => ++stepCalls);
    await wait.forToken(payload.token, { idempotencyKey: cutName });
    return value;
  },
});

let nulStepCalls = 0;
const finishedRuns = new Map<string, string>();
const nulStep = task({
  id: "nul-step",
  retry: { maxAttempts: 1 },
  run: async () => step.run("bad\u0000name", () => ++nulStepCalls),
});
const nulWaitKey = task({
  id: "nul-wait-key",
  retry: { maxAttempts: 1 },
  run: async () => wait.for({ seconds: 1 }, { idempotencyKey: "bad\u0000key" }),
});
const endlessSleep = task({
  id: "endless-sleep",
  retry: { maxAttempts: 1 },
  run: async () => wait.for({ days: 1e9 }),
});

const noSuchDay = task({
  id: "no-such-day",
  retry: { maxAttempts: 1 },
  run: async () => wait.until({ date: "2031-02-30T00:00:00Z" }),
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [cutNames, nulStep, nulWaitKey, endlessSleep, noSuchDay], { timerLoop: false });
  tw.worker.events.on("runFinished", (e) => finishedRuns.set(e.runId, e.status));
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("a step name holding half a surrogate pair", () => {
  it("is the same step on replay: recorded once, no nondeterminism error", async () => {
    expect(cutName.endsWith("\ud83d")).toBe(true);
    const token = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const { id } = await triggerRun(te.engine, te.env, "cut-names", { token });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, token, {}));
    expect((await finished).status).toBe("COMPLETED");
    const run = await getRunRow(te, id);
    expect(JSON.parse(run.output!).json).toBe(1);
    expect(stepCalls).toBe(1);
  });
});

describe("names, keys and sleeps Postgres could not record", () => {
  it("fail the run with a clear error before any side effect", async () => {
    const cases = [
      ["nul-step", "step.run(): a step name cannot contain a NUL character"],
      ["nul-wait-key", "A wait's idempotencyKey cannot contain a NUL character"],
      ["endless-sleep", "wait.for(): {\"days\":1000000000} is too long (at most 365000 days)"],
      ["no-such-day", 'wait.until(): invalid date "2031-02-30T00:00:00Z"'],
    ] as const;
    for (const [taskId, message] of cases) {
      const run = await triggerRun(te.engine, te.env, taskId, {});
      await eventually(async () => finishedRuns.has(run.id));
      expect(finishedRuns.get(run.id)).toBe("FAILED");
      expect((await getRunRow(te, run.id)).error).toMatchObject({ message });
    }
    expect(nulStepCalls).toBe(0);
  });
});
