// What task code logs (logger.*, console.*) stored with its run on a real worker and Postgres:
// per attempt, with the step it was logged in and the durable call it came before; lines a
// resumed run logs again while it replays are stored once; each run's log is capped, the cut said
// by one line from svc; retention deletes the log with its run.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, readRunLogs, triggerRun, withTransaction, type RunLog } from "@svc/runtime/engine";
import { logger, step, task, wait } from "@svc/runtime";
import { startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";
import { collectTaskLogs } from "./task-logs.ts";

let te: TestEngine;
let tw: TestWorker;
const workerLog = collectTaskLogs();

const waiter = task({
  id: "logs-around-a-wait",
  run: async (payload: { token: string }) => {
    logger.info("before the wait", { order: 7 });
    console.log("console says %s", "hello", { n: 1 });
    await wait.forToken(payload.token);
    const charged = await step.run("charge", async () => {
      logger.warn("charging");
      return 42;
    });
    console.error("after the step");
    logger.debug("done", { charged });
    return charged;
  },
});

const retried = task({
  id: "logs-per-attempt",
  retry: { maxAttempts: 2, minTimeoutInMs: 0, maxTimeoutInMs: 0 },
  run: async (_payload: unknown, { ctx }) => {
    logger.info(`attempt ${ctx.attempt.number}`);
    if (ctx.attempt.number === 1) throw new Error("first attempt fails");
    return "ok";
  },
});

const flood = task({
  id: "logs-past-the-cap",
  run: async (payload: { lines: number }) => {
    for (let i = 1; i <= payload.lines; i++) logger.info(`line ${i}`);
    logger.info("x".repeat(1000), { big: "y".repeat(1000) });
  },
});

const long = task({
  id: "logs-a-long-line",
  run: async () => {
    logger.info("z".repeat(500), { big: "y".repeat(500), error: new TypeError("bad") });
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  // Lines are written only when an execution ends (no timer flush during a test): each test
  // awaits exactly the batches it expects.
  tw = await startTestWorker(te, [waiter, retried, flood, long], { taskLogs: workerLog, runLogs: { maxLines: 8, maxLineBytes: 300, flushMs: 60_000 } });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

const written = (id: string) => tw.worker.events.next("runLogsWritten", (e) => e.runIds.includes(id));
/** Resolves once batches holding `count` lines of the run were written (each test's runs are alone in their batches). */
const storedLines = (id: string, count: number) =>
  new Promise<void>((resolve) => {
    let seen = 0;
    const off = tw.worker.events.on("runLogsWritten", (e) => {
      if (!e.runIds.includes(id) || (seen += e.stored) < count) return;
      off();
      resolve();
    });
  });
const finished = (id: string) => tw.worker.events.next("runFinished", (e) => e.runId === id);
const stored = async (id: string) => (await readRunLogs(te.db.pool, te.env.id, id, 100)).lines;
const shape = (l: RunLog) => ({ attempt: l.attempt, level: l.level, message: l.message, source: l.source, step: l.step, ledger: l.ledger?.key ?? null });

describe("run logs", () => {
  it("stores logger and console lines of a run with the step they are in and the durable call they precede, lines replayed after a wait once", async () => {
    const token = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const suspended = tw.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "logs-around-a-wait", { token });
    const firstBatch = written(id);
    await suspended;
    await firstBatch;
    expect((await stored(id)).map(shape)).toEqual([
      { attempt: 1, level: "info", message: "before the wait", source: "logger", step: null, ledger: "#0" },
      { attempt: 1, level: "log", message: "console says hello { n: 1 }", source: "console", step: null, ledger: "#0" },
    ]);

    const done = finished(id);
    const lastBatch = written(id);
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, token, {}));
    expect((await done).status).toBe("COMPLETED");
    await lastBatch;
    const lines = await stored(id);
    expect(lines.map(shape)).toEqual([
      { attempt: 1, level: "info", message: "before the wait", source: "logger", step: null, ledger: "#0" },
      { attempt: 1, level: "log", message: "console says hello { n: 1 }", source: "console", step: null, ledger: "#0" },
      // Inside the step (#1, already taken when its function runs): before the next durable call.
      { attempt: 1, level: "warn", message: "charging", source: "logger", step: `step.run("charge")`, ledger: "#2" },
      { attempt: 1, level: "error", message: "after the step", source: "console", step: null, ledger: "#2" },
      { attempt: 1, level: "debug", message: "done", source: "logger", step: null, ledger: "#2" },
    ]);
    expect(lines.map((l) => l.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(lines[0]!.attributes).toEqual({ order: 7 });
    expect(lines[4]!.attributes).toEqual({ charged: 42 });
    expect(lines.every((l) => l.loggedAt instanceof Date)).toBe(true);
    // The worker's own log had the replayed lines too (marked), and console lines with their run.
    const replayed = workerLog.of(id).filter((r) => r.replayed);
    expect(replayed.map((r) => r.message)).toEqual(["before the wait", "console says hello { n: 1 }"]);
  });

  it("keeps the lines of each attempt", async () => {
    const { id } = await triggerRun(te.engine, te.env, "logs-per-attempt", {});
    // One batch as attempt 1 ends (its retry scheduled), one as attempt 2 does.
    const both = storedLines(id, 2);
    expect((await finished(id)).status).toBe("COMPLETED");
    await both;
    const lines = await stored(id);
    expect(lines.map((l) => [l.attempt, l.message])).toEqual([
      [1, "attempt 1"],
      [2, "attempt 2"],
    ]);
  });

  it("caps a run's log: the first line past the cap becomes one note from svc, later ones are counted as dropped", async () => {
    const { id } = await triggerRun(te.engine, te.env, "logs-past-the-cap", { lines: 12 });
    const batch = written(id);
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(await batch).toMatchObject({ stored: 8, dropped: 5, capped: [id] });
    const { lines, dropped } = await readRunLogs(te.db.pool, te.env.id, id, 100);
    expect(lines.map((l) => l.message)).toEqual([
      ...Array.from({ length: 8 }, (_, i) => `line ${i + 1}`),
      "svc: this run's log reached its cap (8 lines or 1048576 bytes per run); later lines are not kept",
    ]);
    expect(lines.at(-1)).toMatchObject({ level: "warn", source: "svc" });
    // Lines 9 to 12 and the long one.
    expect(dropped).toBe(5);
  });

  it("cuts a line past the line cap and replaces attributes that do not fit by a note", async () => {
    const { id } = await triggerRun(te.engine, te.env, "logs-a-long-line", {});
    const batch = written(id);
    expect((await finished(id)).status).toBe("COMPLETED");
    await batch;
    const [line] = await stored(id);
    expect(line!.message).toBe(`${"z".repeat(300)}… [svc: 200 more bytes not kept]`);
    expect(line!.attributes).toEqual({ "svc.truncated": expect.stringMatching(/^attributes of \d+ bytes were not kept \(a line keeps 300\)$/) });
  });
});
