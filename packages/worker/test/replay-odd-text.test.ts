// Step names and wait keys are stored as text: Postgres keeps half a surrogate pair (a string cut
// in the middle of an emoji) as U+FFFD. A replay must still recognise its own steps.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { step, task, wait } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

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

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [cutNames], { timerLoop: false });
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
