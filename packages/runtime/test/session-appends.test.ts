// svc_append_session_records: the sequence numbers it answers for a batch that mixes records the
// channel has (by part id) and new ones, and what a wait on `.in` gets: the first new record, as
// stored. The session's row is written once per append, and part ids are looked up by index.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  appendRecords, makeChannelWaitpoint, registerWait, startSession, withTransaction, type EngineDeps, type Environment,
} from "@svc/runtime/engine";
import { startTestEngine, type TestDatabase, type TestEngine } from "@svc/runtime/testing";

let te: TestEngine;
let db: TestDatabase;
let engine: EngineDeps;
let env: Environment;

beforeAll(async () => {
  te = await startTestEngine();
  ({ db, engine, env } = te);
});
afterAll(async () => te?.close());

const session = async (externalId: string) =>
  (await startSession(engine, env, { type: "chat", externalId, taskIdentifier: "chat", triggerConfig: { basePayload: {} } })).session;
const record = (partId: string, data = `"${partId}"`, headers?: [string, string][]) => ({ data, partId, ...(headers ? { headers } : {}) });

describe("session appends", () => {
  it("numbers new records in input order and answers a stored part id with its number", async () => {
    const s = await session("numbers");
    expect((await appendRecords(engine, env, s.id, "out", [record("a"), record("b")]))!.results).toEqual([
      { seq: 1, duplicate: false },
      { seq: 2, duplicate: false },
    ]);
    expect((await appendRecords(engine, env, s.id, "out", [record("b"), record("c"), record("a"), record("d")]))!.results).toEqual([
      { seq: 2, duplicate: true },
      { seq: 3, duplicate: false },
      { seq: 1, duplicate: true },
      { seq: 4, duplicate: false },
    ]);
    expect((await appendRecords(engine, env, s.id, "out", [record("d")]))!.results).toEqual([{ seq: 4, duplicate: true }]);
    const { rows } = await db.pool.query(`SELECT in_seq, out_seq FROM sessions WHERE id = $1`, [s.id]);
    expect(rows).toEqual([{ in_seq: "0", out_seq: "4" }].map((r) => ({ in_seq: Number(r.in_seq), out_seq: Number(r.out_seq) })));
    const stored = await db.pool.query(`SELECT seq, part_id FROM session_records WHERE session_id = $1 AND io = 'out' ORDER BY seq`, [s.id]);
    expect(stored.rows.map((r) => [Number(r.seq), r.part_id])).toEqual([[1, "a"], [2, "b"], [3, "c"], [4, "d"]]);
  });

  it("hands a wait on .in the first new record of the append, with its headers, and moves in_delivered to it", async () => {
    const s = await session("delivered");
    const { rows: runs } = await db.pool.query<{ run_id: string }>(`SELECT run_id FROM session_runs WHERE session_id = $1`, [s.id]);
    const runId = runs[0]!.run_id;
    await db.pool.query(`UPDATE runs SET status = 'EXECUTING', claim_token = 'claim', attempt_number = 1 WHERE id = $1`, [runId]);
    await appendRecords(engine, env, s.id, "in", [record("early")]);
    const waitpointId = await withTransaction(db.pool, async (tx) => {
      // After the record the run already has: it waits for the next one.
      const id = await makeChannelWaitpoint(engine, tx, { runId, environmentId: env.id, sessionRef: s.id, io: "in", afterSeq: 1, timeoutAt: null, outAppended: 2 });
      expect(await registerWait(tx, { runId, environmentId: env.id, claimToken: "claim", epoch: 0, stepKey: "#0", kind: "session", target: `${s.id}:in`, waitpointId: id, now: new Date() })).toMatchObject({ kind: "suspended" });
      return id;
    });
    const appended = await appendRecords(engine, env, s.id, "in", [record("early"), record("m1", '{"text":"hi"}', [["k", "v"]]), record("m2")]);
    expect(appended!.results).toEqual([{ seq: 1, duplicate: true }, { seq: 2, duplicate: false }, { seq: 3, duplicate: false }]);
    const output = '{"seq":2,"id":"m1","data":{"text":"hi"},"headers":[["k", "v"]]}';
    const { rows: waitpoints } = await db.pool.query(`SELECT status, output FROM waitpoints WHERE id = $1`, [waitpointId]);
    expect(waitpoints).toEqual([{ status: "COMPLETED", output }]);
    const { rows: ledger } = await db.pool.query(`SELECT resolved, outcome FROM run_ledger WHERE run_id = $1`, [runId]);
    expect(ledger).toEqual([{ resolved: true, outcome: { ok: true, output, outputType: "application/json", outAppended: 2 } }]);
    const { rows } = await db.pool.query(`SELECT in_seq, in_delivered FROM sessions WHERE id = $1`, [s.id]);
    expect(rows.map((r) => [Number(r.in_seq), Number(r.in_delivered)])).toEqual([[3, 2]]);
  });

  it("finds stored part ids by index, not by reading the channel", async () => {
    const s = await session("indexed");
    await appendRecords(engine, env, s.id, "out", Array.from({ length: 300 }, (_, i) => record(`p${i}`)));
    // With statistics, as autovacuum keeps them (a table never analyzed is estimated at one row per channel).
    await db.pool.query(`ANALYZE session_records`);
    // The plans of the function's statements, as auto_explain tells them on this connection.
    const client = await db.pool.connect();
    const plans: string[] = [];
    const onNotice = (notice: { message?: string }) => plans.push(notice.message ?? "");
    client.on("notice", onNotice);
    try {
      await client.query(`LOAD 'auto_explain'`);
      await client.query(`SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_timing = off;
        SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice`);
      const appended = await appendRecords({ ...engine, db: client as unknown as typeof engine.db }, env, s.id, "out", [record("p7"), record("new")]);
      expect(appended!.results).toEqual([{ seq: 8, duplicate: true }, { seq: 301, duplicate: false }]);
    } finally {
      client.off("notice", onNotice);
      await client.query(`RESET ALL`);
      client.release(true);
    }
    const lookup = plans.find((plan) => plan.includes("jsonb_object_agg(k.part_id, k.seq)"));
    expect(lookup).toMatch(/Index (Only )?Scan using session_records_part on session_records r .*\(actual rows=\d loops=2\)\n\s+Index Cond: \(\(session_id = .*\) AND \(io = .*\) AND \(part_id = /);
    expect(lookup).not.toMatch(/Rows Removed by Filter/);
  });
});
