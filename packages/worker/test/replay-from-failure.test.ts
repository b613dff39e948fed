// Replay from failure: a new run whose ledger starts as the failed attempt's recorded entries, so
// it runs again on the current code without doing again what was recorded.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, replayRun, triggerRun, UnprocessableError, withTransaction } from "@svc/runtime/engine";
import { step, task, tasks, wait } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const calls: Record<string, number> = {};
const count = (key: string) => (calls[key] = (calls[key] ?? 0) + 1);
/** What "the current code" reads: flipped between the failed run and its replay. */
const code = { stepFourFixed: false, stepTwoName: "two" };

const childTask = task({ id: "rff-child", run: async (payload: { n: number }) => (count("child"), { doubled: payload.n * 2 }) });

const fiveSteps = task({
  id: "rff-five-steps",
  retry: { maxAttempts: 1 },
  run: async (payload: { token: string }) => {
    const one = await step.run("one", () => count("one"));
    const two = await step.run("two", () => count("two"));
    const approval = await wait.forToken<{ approved: boolean }>(payload.token);
    const child = await childTask.triggerAndWait({ n: 21 });
    const three = await step.run("three", () => count("three"));
    const four = await step.run("four", () => {
      count("four");
      if (!code.stepFourFixed) throw new Error("step four broke");
      return "fixed";
    });
    const five = await step.run("five", () => count("five"));
    return { one, two, approved: approval.unwrap().approved, child: child.unwrap().doubled, three, four, five };
  },
});

const renamed = task({
  id: "rff-renamed",
  retry: { maxAttempts: 1 },
  run: async () => {
    await step.run("r-one", () => count("r-one"));
    await step.run(code.stepTwoName, () => count(`r-${code.stepTwoName}`));
    await step.run("r-three", () => {
      count("r-three");
      throw new Error("r-three broke");
    });
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [fiveSteps, childTask, renamed], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

async function finished(id: string) {
  return tw.worker.events.next("runFinished", (e) => e.runId === id);
}

describe("replay from failure", () => {
  it("replays a 5-step run that failed at step 4 from step 4: steps 1-3, its wait and its child are not done again", async () => {
    const token = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const { id: failedId } = await triggerRun(te.engine, te.env, "rff-five-steps", { token });
    await tw.worker.events.next("runSuspended", (e) => e.runId === failedId);
    const failed = finished(failedId);
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, token, { approved: true }));
    expect((await failed).status).toBe("FAILED");
    expect(calls).toMatchObject({ one: 1, two: 1, child: 1, three: 1, four: 1 });
    expect(calls.five).toBeUndefined();

    code.stepFourFixed = true;
    // Listening before the replay commits (nothing else runs meanwhile): the new run may start at once.
    const started = tw.worker.events.next("runStarted");
    const done = tw.worker.events.next("runFinished");
    const result = await replayRun(te.engine, te.env, failedId, { from: "failure" });
    expect((await started).runId).toBe(result.id);
    expect((await done).runId).toBe(result.id);
    // Steps one, two, three, the wait on the token and the child's result.
    expect((result as { copiedEntries?: number }).copiedEntries).toBe(5);
    expect((await started).replayedEntries).toBe(5);
    expect((await done).status).toBe("COMPLETED");

    expect(calls).toMatchObject({ one: 1, two: 1, child: 1, three: 1, four: 2, five: 1 });
    const row = await getRunRow(te, result.id);
    expect(JSON.parse(row.output!).json).toEqual({ one: 1, two: 1, approved: true, child: 42, three: 1, four: "fixed", five: 1 });
    expect(row).toMatchObject({ task_identifier: "rff-five-steps", payload: (await getRunRow(te, failedId)).payload, attempt_number: 1, ledger_epoch: 1 });
    const { rows: children } = await te.db.pool.query(`SELECT count(*)::int AS n FROM runs WHERE task_identifier = 'rff-child'`);
    expect(children[0].n).toBe(1);
    const { rows: ledger } = await te.db.pool.query(`SELECT step_key, kind, target FROM run_ledger WHERE run_id = $1 ORDER BY created_at, step_key`, [result.id]);
    expect(ledger.map((e) => `${e.step_key} ${e.kind} ${e.kind === "step" || e.kind === "child" ? e.target : ""}`.trim())).toEqual([
      "#0 step one", "#1 step two", "#2 token", "#3 child rff-child", "#4 step three", "#5 step four", "#6 step five",
    ]);
    // The failed run is left as it was.
    expect((await getRunRow(te, failedId)).status).toBe("FAILED");
  });

  it("fails the replay with the nondeterminism report when the code no longer matches what was recorded, before the changed step runs", async () => {
    const failed = tw.worker.events.next("runFinished");
    const { id: failedId } = await triggerRun(te.engine, te.env, "rff-renamed", {});
    expect(await failed).toMatchObject({ runId: failedId, status: "FAILED" });
    expect(calls).toMatchObject({ "r-one": 1, "r-two": 1, "r-three": 1 });

    code.stepTwoName = "two-renamed";
    const done = tw.worker.events.next("runFinished");
    const { id } = await replayRun(te.engine, te.env, failedId, { from: "failure" });
    expect(await done).toMatchObject({ runId: id, status: "FAILED" });
    const error = (await getRunRow(te, id)).error as { code?: string; message?: string };
    expect(error.code).toBe("NONDETERMINISM");
    expect(error.message).toContain(`Nondeterministic replay at step #1: the ledger recorded step "two" but the code asked for step "two-renamed"`);
    // Step one replayed, the renamed step and the rest never ran.
    expect(calls).toMatchObject({ "r-one": 1, "r-two": 1, "r-three": 1 });
    expect(calls["r-two-renamed"]).toBeUndefined();
  });

  it("refuses a run that did not end failing", async () => {
    const done = tw.worker.events.next("runFinished");
    const { id } = await triggerRun(te.engine, te.env, "rff-child", { n: 1 });
    expect(await done).toMatchObject({ runId: id, status: "COMPLETED" });
    await expect(replayRun(te.engine, te.env, id, { from: "failure" })).rejects.toThrow(UnprocessableError);
    await expect(replayRun(te.engine, te.env, id, { from: "failure" })).rejects.toThrow(/is COMPLETED: only a run that ended FAILED, CRASHED, SYSTEM_FAILURE, TIMED_OUT can be replayed from its failure/);
  });
});
