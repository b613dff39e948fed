// Retention: finished runs older than their environment's retention period go, with everything
// that hangs off them; runs that are recent, unfinished or still needed stay.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "@svc/runtime/db";
import {
  appendRunLogs, appendStreamChunks, DEFAULT_RUN_LOG_LIMITS,
  appendRecord, closeSession, completeToken, createBranch, createToken, FakeClock, fireAllDue, getEnvironment, NotFoundError, presignPacketUpload,
  replayRun, retrieveRun, setRunRetention, startSession, storePacketUpload, triggerBatch, triggerRun, type Environment,
} from "@svc/runtime/engine";
import { startTestEngine, waitingRunOn, type TestEngine } from "@svc/runtime/testing";
import { at, completedWait, DAY, exists, finishRun, retentionWork, rowsOf } from "./retention-fixtures.ts";

let te: TestEngine;
const T0 = new Date("2026-01-01T00:00:00Z");
const clock = new FakeClock(T0);
const t = (days: number, ms = 0) => new Date(T0.getTime() + days * DAY + ms);

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

/** One pass of the retention loop at the clock's time. */
async function sweep(options: { defaultDays?: number; batchSize?: number } = {}) {
  return fireAllDue(te.engine, clock.now(), [retentionWork(options)]);
}

async function finishedRun(env: Environment, day: number, task = "report", options: Parameters<typeof triggerRun>[4] = {}) {
  const { id } = await at(clock, t(day), () => triggerRun(te.engine, env, task, { n: 1 }, options));
  await finishRun(te.db.pool, id, t(day, 1000));
  return id;
}

describe("the retention sweep", () => {
  it("deletes old finished runs with their attempts, ledger, waitpoints, batch, session, schedule ticks, ended bulk actions and packets, and keeps the rest", async () => {
    const db = te.db.pool;
    const env = te.env;
    // Day 0: a run with a stored payload, a wait and a step; an upload no trigger used.
    const token = await at(clock, t(0), () => presignPacketUpload(db, env.id, "trigger/old/payload.json", clock.now()));
    await storePacketUpload(db, token, "application/json", Buffer.from('{"big":true}'), t(0));
    const orphan = await presignPacketUpload(db, env.id, "trigger/orphan/payload.json", t(0));
    await storePacketUpload(db, orphan, "application/json", Buffer.from("{}"), t(0));
    const stored = await at(clock, t(0), () => triggerRun(te.engine, env, "report", "trigger/old/payload.json", { payloadType: "application/store" }));
    const wait = await completedWait(db, stored.id, t(0, 500));
    await finishRun(db, stored.id, t(0, 1000));
    // A token completed on day 0, a batch of two, a closed session with records, a scheduled run and its tick.
    const tokenDone = await at(clock, t(0), () => createToken(te.engine, env.id, {}));
    await withTransaction(db, (tx) => completeToken(te.engine, tx, tokenDone.waitpoint.id, { approved: true }));
    const batch = await at(clock, t(0), () => triggerBatch(te.engine, env, { items: [{ task: "fan", payload: 1 }, { task: "fan", payload: 2 }] }));
    for (const id of batch.runs) await finishRun(db, id, t(0, 2000));
    const session = await at(clock, t(0), () => startSession(te.engine, env, { type: "chat", taskIdentifier: "agent", triggerConfig: { basePayload: {} } }));
    await at(clock, t(0, 100), () => appendRecord(te.engine, env, session.session.id, { io: "in", data: '"hello"' }));
    await at(clock, t(0, 200), () => appendRecord(te.engine, env, session.session.id, { io: "out", data: '"hi!"' }));
    await finishRun(db, session.runId, t(0, 300));
    await at(clock, t(0, 400), () => closeSession(te.engine, env, session.session.id, {}));
    await db.query(
      `INSERT INTO schedules (id, environment_id, type, task_identifier, cron, next_run_at, created_at, updated_at)
       VALUES ('sched_hourly', $1, 'IMPERATIVE', 'report', '0 * * * *', $2, $3, $3)`,
      [env.id, t(40), t(0)],
    );
    const scheduled = await finishedRun(env, 0);
    await db.query(`UPDATE runs SET schedule_id = 'sched_hourly' WHERE id = $1`, [scheduled]);
    await db.query(`INSERT INTO schedule_ticks (schedule_id, tick_at, run_id, fired_at) VALUES ('sched_hourly', $1, $2, $1)`, [t(0), scheduled]);
    // Kept: a run still queued since day 0, one waiting on a token since day 0, one finished on day 29,
    // and a replay (day 29) of the stored-payload run, which names the same packet.
    const queued = await at(clock, t(0), () => triggerRun(te.engine, env, "report", {}));
    const pending = await at(clock, t(0), () => createToken(te.engine, env.id, { timeout: "365d" }));
    const waiting = await waitingRunOn(db, env.id, pending.waitpoint.id);
    await db.query(`UPDATE runs SET created_at = $2, updated_at = $2 WHERE id = $1`, [waiting, t(0)]);
    const recent = await finishedRun(env, 29);
    const replay = await at(clock, t(29), () => replayRun(te.engine, env, stored.id));
    // What both the old stored-payload run and the recent one logged.
    const logLine = (runId: string) => ({ environmentId: env.id, runId, attempt: 1, level: "info" as const, message: "hello", attributes: null, loggedAt: t(0), source: "logger" as const, step: null, ledger: null });
    await appendRunLogs(db, [logLine(stored.id), logLine(recent)], DEFAULT_RUN_LOG_LIMITS);
    // Bulk actions: one that ended on day 0 (goes), one still pending since day 0 and one that ended on day 29 (kept).
    const bulk = (id: string, status: string, day: number) =>
      db.query(
        `INSERT INTO bulk_actions (id, environment_id, action, status, run_ids, total, created_at, updated_at, completed_at)
         VALUES ($1, $2, 'CANCEL', $3, '{}', 0, $4, $4, CASE WHEN $3 = 'PENDING' THEN NULL ELSE $4::timestamptz END)`,
        [id, env.id, status, t(day)],
      );
    await bulk("bulk_old", "COMPLETED", 0);
    await bulk("bulk_pending", "PENDING", 0);
    await bulk("bulk_recent", "ABORTED", 29);
    // The runs they touched (the run list's filter[bulkAction]): go with their run, or their action.
    const touched = async (action: string, runId: string) =>
      db.query(`INSERT INTO bulk_action_runs (environment_id, bulk_action_id, created_at, run_id) SELECT environment_id, $1, created_at, id FROM runs WHERE id = $2`, [action, runId]);
    await touched("bulk_pending", stored.id);
    await touched("bulk_pending", queued.id);
    await touched("bulk_old", recent);
    await touched("bulk_recent", recent);
    // What both streamed (realtime stream chunks).
    for (const id of [stored.id, recent]) await appendStreamChunks(te.engine, env.id, id, "out", "tokens", [{ data: '"a"' }, { data: '"b"' }]);

    clock.set(t(31));
    const counts = await sweep();
    expect(counts["run-retention"]).toBe(5);

    for (const id of [stored.id, ...batch.runs, session.runId, scheduled]) expect(await rowsOf(db, id), id).toEqual({ run: 0, attempts: 0, ledger: 0 });
    expect(await exists(db, "waitpoints", "id", wait)).toBe(false);
    expect(await exists(db, "waitpoints", "id", tokenDone.waitpoint.id)).toBe(false);
    expect(await exists(db, "batches", "id", batch.id)).toBe(false);
    expect(await exists(db, "sessions", "id", session.session.id)).toBe(false);
    expect(await exists(db, "session_records", "session_id", session.session.id)).toBe(false);
    expect(await exists(db, "session_runs", "session_id", session.session.id)).toBe(false);
    expect(await exists(db, "schedule_ticks", "schedule_id", "sched_hourly")).toBe(false);
    expect(await exists(db, "schedules", "id", "sched_hourly")).toBe(true);
    expect(await exists(db, "bulk_actions", "id", "bulk_old")).toBe(false);
    expect(await exists(db, "bulk_actions", "id", "bulk_pending")).toBe(true);
    expect(await exists(db, "bulk_actions", "id", "bulk_recent")).toBe(true);
    const touchedRows = (await db.query(`SELECT bulk_action_id, run_id FROM bulk_action_runs WHERE environment_id = $1 ORDER BY bulk_action_id, run_id`, [env.id])).rows;
    expect(touchedRows).toEqual([{ bulk_action_id: "bulk_pending", run_id: queued.id }, { bulk_action_id: "bulk_recent", run_id: recent }]);
    expect(await exists(db, "run_logs", "run_id", stored.id)).toBe(false);
    expect(await exists(db, "run_log_totals", "run_id", stored.id)).toBe(false);
    expect(await exists(db, "run_logs", "run_id", recent)).toBe(true);
    expect(await exists(db, "run_stream_records", "run_id", stored.id)).toBe(false);
    expect(await exists(db, "run_streams", "run_id", stored.id)).toBe(false);
    expect(await exists(db, "run_stream_records", "run_id", recent)).toBe(true);
    expect(await exists(db, "packets", "path", "trigger/orphan/payload.json")).toBe(false);
    // The replay still names the old run's packet.
    expect(await exists(db, "packets", "path", "trigger/old/payload.json")).toBe(true);

    for (const id of [queued.id, waiting, recent, replay.id]) expect((await rowsOf(db, id)).run, id).toBe(1);
    expect(await rowsOf(db, recent)).toEqual({ run: 1, attempts: 1, ledger: 1 });
    expect(await exists(db, "waitpoints", "id", pending.waitpoint.id)).toBe(true);
    expect(await exists(db, "run_ledger", "run_id", waiting)).toBe(true);

    await expect(retrieveRun(te.engine, env.id, stored.id)).rejects.toThrow(NotFoundError);
    await expect(retrieveRun(te.engine, env.id, stored.id)).rejects.toThrow("Run not found");
    const { rows } = await db.query(`SELECT swept_at, last_deleted, deleted_runs FROM retention_sweeps WHERE environment_id = $1`, [env.id]);
    expect(rows[0]).toMatchObject({ swept_at: t(31), deleted_runs: 5 });
    expect(rows[0].last_deleted).toMatchObject({ runs: 5, attempts: 5, batches: 1, waitpoints: 2, sessions: 1, sessionRecords: 2, scheduleTicks: 1, bulkActions: 1, packets: 1 });

    // Once the replay is old too, the packet goes with it.
    await finishRun(db, replay.id, t(29, 1000));
    clock.set(t(60));
    await sweep();
    expect(await exists(db, "packets", "path", "trigger/old/payload.json")).toBe(false);
    expect((await rowsOf(db, recent)).run).toBe(0);
  });

  it("keeps a finished run while something needs it: a waiting parent, a valid idempotency key, unfinished runs of its batch (or of a batch it answered an item of), an active session", async () => {
    const db = te.db.pool;
    const env = te.env;
    clock.set(t(100));
    const child = await finishedRun(env, 100, "child");
    const parent = await at(clock, t(100), () => triggerRun(te.engine, env, "parent", {}));
    await db.query(
      `INSERT INTO waitpoints (id, environment_id, type, status, completed_by_run_id, created_at) VALUES ('waitpoint_child', $1, 'RUN', 'WAITING', $2, $3)`,
      [env.id, child, t(100)],
    );
    await db.query(`UPDATE runs SET status = 'WAITING' WHERE id = $1`, [parent.id]);
    await db.query(`INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id) VALUES ($1, 0, 'child#1', 'child', $2, 'waitpoint_child')`, [parent.id, child]);
    // Keys: one valid for 60 days (kept), one on a FAILED run (no longer answers: deleted).
    const keyed = await finishedRun(env, 100, "keyed", { idempotencyKey: "order-1", idempotencyKeyTTL: "60d" });
    const failedKeyed = await at(clock, t(100), () => triggerRun(te.engine, env, "keyed", {}, { idempotencyKey: "order-2", idempotencyKeyTTL: "60d" }));
    await finishRun(db, failedKeyed.id, t(100, 1000), "FAILED");
    // A batch with one run finished, one still queued.
    const batch = await at(clock, t(100), () => triggerBatch(te.engine, env, { items: [{ task: "fan" }, { task: "fan" }] }));
    await finishRun(db, batch.runs[0]!, t(100, 1000));
    // A run that answered an item of another batch (its idempotency key handed it back), whose own run is still queued.
    const member = await finishedRun(env, 100, "fan");
    const other = await at(clock, t(100), () => triggerBatch(te.engine, env, { items: [{ task: "fan" }] }));
    await db.query(`UPDATE batches SET run_count = 2 WHERE id = $1`, [other.id]);
    await db.query(`INSERT INTO batch_members (batch_id, batch_index, run_id) VALUES ($1, 1, $2)`, [other.id, member]);
    await db.query(`UPDATE runs SET awaited = true WHERE id = $1`, [member]);
    // An active session: its first run finished, an append started its current run, which finished too.
    const session = await at(clock, t(100), () => startSession(te.engine, env, { type: "chat", taskIdentifier: "agent", triggerConfig: { basePayload: {} } }));
    await finishRun(db, session.runId, t(100, 100));
    const appended = await at(clock, t(100, 200), () => appendRecord(te.engine, env, session.session.id, { io: "in", data: '"again"' }));
    expect(appended.runStarted).toBe(true);
    const { rows: current } = await db.query<{ current_run_id: string }>(`SELECT current_run_id FROM sessions WHERE id = $1`, [session.session.id]);
    await finishRun(db, current[0]!.current_run_id, t(100, 300));

    clock.set(t(131));
    await sweep();
    expect((await rowsOf(db, child)).run).toBe(1);
    expect((await rowsOf(db, keyed)).run).toBe(1);
    expect((await rowsOf(db, failedKeyed.id)).run).toBe(0);
    expect((await rowsOf(db, batch.runs[0]!)).run).toBe(1);
    expect(await exists(db, "batches", "id", batch.id)).toBe(true);
    expect((await rowsOf(db, member)).run).toBe(1);
    expect((await rowsOf(db, session.runId)).run).toBe(0); // an earlier run of the session
    expect((await rowsOf(db, current[0]!.current_run_id)).run).toBe(1);
    expect(await exists(db, "session_records", "session_id", session.session.id)).toBe(true);

    // What held them lets go: the parent's wait resolves, the key's TTL passes, the batch's last run
    // finishes (day 101), the session closes (day 101).
    await db.query(`UPDATE run_ledger SET resolved = true, outcome = '{"ok":true}' WHERE run_id = $1`, [parent.id]);
    await finishRun(db, batch.runs[1]!, t(101));
    await finishRun(db, other.runs[0]!, t(101));
    await at(clock, t(101), () => closeSession(te.engine, env, session.session.id, {}));
    clock.set(t(161));
    await sweep();
    for (const id of [child, keyed, ...batch.runs, member, other.runs[0]!, current[0]!.current_run_id]) expect((await rowsOf(db, id)).run, id).toBe(0);
    expect(await exists(db, "batches", "id", batch.id)).toBe(false);
    expect(await exists(db, "batches", "id", other.id)).toBe(false);
    expect(await exists(db, "batch_members", "run_id", member)).toBe(false);
    expect(await exists(db, "sessions", "id", session.session.id)).toBe(false);
    expect(await exists(db, "session_records", "session_id", session.session.id)).toBe(false);
  });

  it("keeps runs as long as each environment says: its own setting, 0 for ever, a preview branch as its preview environment", async () => {
    const db = te.db.pool;
    const envs = te.project.environments;
    const [dev, staging, prod, preview] = await Promise.all(["dev", "staging", "prod", "preview"].map(async (slug) => (await getEnvironment(db, envs[slug as "dev"].id))!));
    const branch = (await createBranch(db, te.project.projectRef, "feature-x")).environment;
    await setRunRetention(db, staging!.id, 5);
    await setRunRetention(db, prod!.id, 0);
    await setRunRetention(db, preview!.id, 10);
    const runs: Record<string, string> = {};
    for (const [name, env] of [["dev", dev!], ["staging", staging!], ["prod", prod!], ["preview", preview!], ["branch", branch]] as const) runs[name] = await finishedRun(env, 200);
    const alive = async () => {
      const out: string[] = [];
      for (const [name, id] of Object.entries(runs)) if ((await rowsOf(db, id)).run) out.push(name);
      return out;
    };

    clock.set(t(206));
    await sweep();
    expect(await alive()).toEqual(["dev", "prod", "preview", "branch"]);
    clock.set(t(211));
    await sweep();
    expect(await alive()).toEqual(["dev", "prod"]);
    clock.set(t(231));
    await sweep();
    expect(await alive()).toEqual(["prod"]);
    // The worker's default can be 0 as well; an environment's own setting still applies.
    const devRun = await finishedRun(dev!, 231);
    const stagingRun = await finishedRun(staging!, 231);
    clock.set(t(400));
    await sweep({ defaultDays: 0 });
    expect((await rowsOf(db, devRun)).run).toBe(1);
    expect((await rowsOf(db, stagingRun)).run).toBe(0);
    expect((await rowsOf(db, runs.prod!)).run).toBe(1);
  });
  it("deletes the run_tags rows of the runs it deletes (the run list's tag lanes) and keeps the others'", async () => {
    const db = te.db.pool;
    const env = te.env;
    const old = await finishedRun(env, 1000, "tagged", { tags: ["red", "blue"] });
    const recent = await finishedRun(env, 1025, "tagged", { tags: ["red"] });
    const tagsOf = async (runId: string) =>
      (await db.query<{ tag: string }>(`SELECT tag FROM run_tags WHERE run_id = $1 ORDER BY tag`, [runId])).rows.map((r) => r.tag);
    expect(await tagsOf(old)).toEqual(["blue", "red"]);
    clock.set(t(1040));
    await sweep({ defaultDays: 30 });
    expect(await exists(db, "runs", "id", old)).toBe(false);
    expect(await tagsOf(old)).toEqual([]);
    expect(await tagsOf(recent)).toEqual(["red"]);
  });
});
