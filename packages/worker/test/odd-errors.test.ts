// Whatever task code throws, the run ends with a readable error: values JSON cannot hold (a NUL,
// half a surrogate pair, a BigInt, a cycle) must not fail the write that records the ending, which
// is shared with the other runs finishing at the same moment.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const finished = new Set<string>();

const cyclic: Record<string, unknown> = { name: "cyclic" };
cyclic.self = cyclic;
const throwers: Record<string, () => unknown> = {
  nul: () => new Error("bad\u0000byte"),
  surrogate: () => new Error("half \ud800 a pair"),
  bigint: () => ({ amount: 10n }),
  cycle: () => cyclic,
  undefinedValue: () => undefined,
  // Errors are plain objects: libraries set message and name to whatever they like.
  numberMessage: () => Object.assign(new Error("replaced"), { message: 42 }),
  undefinedName: () => Object.assign(new Error("nameless"), { name: undefined }),
  throwingMessage: () =>
    Object.defineProperty(new Error("hidden"), "message", {
      get() {
        throw new Error("no message for you");
      },
    }),
};
const thrower = task({
  id: "thrower",
  retry: { maxAttempts: 1 },
  run: async (payload: { kind: string }) => {
    throw throwers[payload.kind]!();
  },
});
const fine = task({ id: "fine", run: async () => "fine" });
const badOutput = task({
  id: "bad-output",
  run: async () => ({
    get boom(): string {
      throw new Error("this getter throws");
    },
  }),
});

beforeAll(async () => {
  te = await startTestEngine();
  // A short lease: the run whose ending cannot be written is taken back when it lapses.
  tw = await startTestWorker(te, [thrower, fine, badOutput], { leaseMs: 3000 });
  tw.worker.events.on("runFinished", (e) => finished.add(e.runId));
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("errors task code throws", () => {
  it("are recorded readably, and runs finishing alongside them complete", async () => {
    const kinds = Object.keys(throwers);
    const runs = await Promise.all([
      ...kinds.map((kind) => triggerRun(te.engine, te.env, "thrower", { kind })),
      ...Array.from({ length: 5 }, () => triggerRun(te.engine, te.env, "fine", {})),
    ]);
    await eventually(async () => runs.every((r) => finished.has(r.id)), 15_000);
    const rows = await Promise.all(runs.map((r) => getRunRow(te, r.id)));
    const errors = Object.fromEntries(kinds.map((kind, i) => [kind, rows[i]!]));
    for (const row of Object.values(errors)) expect(row.status).toBe("FAILED");
    expect(errors.nul!.error).toMatchObject({ name: "Error", message: "bad\ufffdbyte" });
    expect(errors.surrogate!.error).toMatchObject({ name: "Error", message: "half \ufffd a pair" });
    expect((errors.bigint!.error as { message: string }).message).toContain("10n");
    expect((errors.cycle!.error as { message: string }).message).toContain("[Circular");
    expect((errors.undefinedValue!.error as { message: string }).message).toBe("undefined");
    expect(errors.numberMessage!.error).toMatchObject({ name: "Error", message: "42" });
    expect(errors.undefinedName!.error).toMatchObject({ name: "Error", message: "nameless" });
    expect(errors.throwingMessage!.error).toMatchObject({ name: "Error", message: expect.stringContaining("no message for you") });
    for (const row of rows.slice(kinds.length)) expect(row.status).toBe("COMPLETED");
  });
});

describe("a return value that cannot be stored", () => {
  it("fails its run with a clear error", async () => {
    const { id } = await triggerRun(te.engine, te.env, "bad-output", {});
    await eventually(async () => finished.has(id));
    const row = await getRunRow(te, id);
    expect(row.status).toBe("FAILED");
    expect(row.error).toMatchObject({ code: "OUTPUT_UNSERIALIZABLE", message: expect.stringContaining("this getter throws") });
  });
});

describe("a run whose ending cannot be written", () => {
  it("is not stranded: its lease lapses and the run completes on a later attempt", async () => {
    // Writes that would complete this run fail (as if the database refused them for a while). The
    // trigger exists before the run does: a trivial run could otherwise complete first.
    await te.db.pool.query(`
      CREATE FUNCTION refuse_completion() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'refused for the test'; END $$;
      CREATE TRIGGER refuse_completion BEFORE UPDATE ON runs FOR EACH ROW
        WHEN (NEW.status = 'COMPLETED' AND NEW.payload LIKE '%refuse-me%') EXECUTE FUNCTION refuse_completion();`);
    const failedWrite = tw.worker.events.next("error", (e) => String((e.error as Error)?.message).includes("refused for the test"));
    const flaky = await triggerRun(te.engine, te.env, "fine", { marker: "refuse-me" });
    await failedWrite;
    await te.db.pool.query(`DROP TRIGGER refuse_completion ON runs; DROP FUNCTION refuse_completion()`);
    expect((await getRunRow(te, flaky.id)).status).toBe("EXECUTING");
    // The execution that could not end holds the run no longer: its lease lapses (a start offered
    // to the worker) or its job's heartbeat does, and the next attempt runs it.
    const row = await eventually(async () => {
      const r = await getRunRow(te, flaky.id);
      return r.status === "COMPLETED" && r;
    }, 40_000);
    expect(row.attempt_number).toBe(2);
    const attempts = (await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1 ORDER BY number`, [flaky.id])).rows;
    expect(attempts).toEqual([{ number: 1, status: "CRASHED" }, { number: 2, status: "COMPLETED" }]);
  }, 45_000);
});
