// A run's wait on a session channel (makeChannelWaitpoint, one statement: svc_make_channel_wait):
// what the waitpoint is made as in each case — a record already after the cursor, a closed
// session, nothing yet (WAITING, with the cursor the next append compares against), an unknown
// session — and when a waiting one times out.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  appendRecords, closeSession, makeChannelWaitpoint, NotFoundError, startSession, withTransaction, type EngineDeps, type Environment,
} from "@svc/runtime/engine";
import { FakeClock } from "@svc/runtime/engine";
import { startTestEngine, type TestDatabase, type TestEngine } from "@svc/runtime/testing";

const clock = new FakeClock(new Date("2026-11-25T08:00:00Z"));
let te: TestEngine;
let db: TestDatabase;
let engine: EngineDeps;
let env: Environment;

beforeAll(async () => {
  te = await startTestEngine({ clock });
  ({ db, engine, env } = te);
});
afterAll(async () => te?.close());

async function chat(externalId: string, expiresAt?: Date) {
  const { session } = await startSession(engine, env, { type: "chat", externalId, taskIdentifier: "chat", triggerConfig: { basePayload: {} }, ...(expiresAt ? { expiresAt } : {}) });
  const { rows } = await db.pool.query<{ run_id: string }>(`SELECT run_id FROM session_runs WHERE session_id = $1`, [session.id]);
  return { id: session.id, runId: rows[0]!.run_id };
}

const wait = (s: { id: string; runId: string }, input: { sessionRef?: string; io?: "in" | "out"; afterSeq?: number | null; timeoutAt?: Date | null; outAppended?: number } = {}) =>
  withTransaction(db.pool, (tx) =>
    makeChannelWaitpoint(engine, tx, { runId: s.runId, environmentId: env.id, sessionRef: input.sessionRef ?? s.id, io: input.io ?? "in", afterSeq: input.afterSeq ?? null, timeoutAt: input.timeoutAt ?? null, outAppended: input.outAppended ?? 0 }),
  );

async function waitpoint(id: string) {
  const { rows } = await db.pool.query(`SELECT status, output, output_type, output_is_error, timeout_at, completed_at FROM waitpoints WHERE id = $1`, [id]);
  return rows[0];
}

async function sessionWaits(waitpointId: string) {
  const { rows } = await db.pool.query(`SELECT io, after_seq::int, out_appended FROM session_waits WHERE waitpoint_id = $1`, [waitpointId]);
  return rows;
}

describe("a run's channel wait", () => {
  it("takes a record already there after its cursor, with its headers, and moves in_delivered to it", async () => {
    const s = await chat("arrived");
    await appendRecords(engine, env, s.id, "in", [{ data: '"one"', partId: "p1" }, { data: '{"text":"two"}', partId: "p2", headers: [["k", "v"]] }]);
    const id = await wait(s, { sessionRef: "arrived", afterSeq: 1 });
    expect(await waitpoint(id)).toEqual({
      status: "COMPLETED", output: '{"seq":2,"id":"p2","data":{"text":"two"},"headers":[["k", "v"]]}', output_type: "application/json", output_is_error: false, timeout_at: null, completed_at: clock.now(),
    });
    expect(await sessionWaits(id)).toEqual([]);
    const { rows } = await db.pool.query(`SELECT in_delivered::int FROM sessions WHERE id = $1`, [s.id]);
    expect(rows[0].in_delivered).toBe(2);
  });

  it("starts a run's first wait where the session started the run, not at the beginning", async () => {
    const s = await chat("first-wait");
    await appendRecords(engine, env, s.id, "in", [{ data: '"before"', partId: "b" }]);
    await db.pool.query(`UPDATE session_runs SET start_after = 1 WHERE session_id = $1`, [s.id]);
    const id = await wait(s);
    expect((await waitpoint(id)).status).toBe("WAITING");
    expect(await sessionWaits(id)).toEqual([{ io: "in", after_seq: 1, out_appended: 0 }]);
  });

  it("waits for the next record on .out without touching in_delivered, timing out at the earlier of its timeout and the session's expiry", async () => {
    const expiresAt = new Date(clock.now().getTime() + 60_000);
    const s = await chat("waiting", expiresAt);
    const soon = new Date(clock.now().getTime() + 10_000);
    const early = await wait(s, { io: "out", afterSeq: 0, timeoutAt: soon, outAppended: 3 });
    expect(await waitpoint(early)).toMatchObject({ status: "WAITING", timeout_at: soon, output: null });
    expect(await sessionWaits(early)).toEqual([{ io: "out", after_seq: 0, out_appended: 3 }]);
    const late = await wait(s, { io: "out", afterSeq: 0, timeoutAt: new Date(expiresAt.getTime() + 60_000) });
    expect((await waitpoint(late)).timeout_at).toEqual(expiresAt);
    const never = await wait(s, { io: "out", afterSeq: 0 });
    expect((await waitpoint(never)).timeout_at).toEqual(expiresAt);
  });

  it("ends at once with SESSION_CLOSED on a closed session", async () => {
    const s = await chat("closed");
    await appendRecords(engine, env, s.id, "in", [{ data: '"unread"', partId: "u" }]);
    await closeSession(engine, env, s.id, {});
    const id = await wait(s, { afterSeq: 0 });
    expect(await waitpoint(id)).toMatchObject({ status: "COMPLETED", output_is_error: true, output: JSON.stringify({ name: "SessionClosedError", code: "SESSION_CLOSED", message: "The session was closed" }) });
    expect(await sessionWaits(id)).toEqual([]);
  });

  it("refuses a session that is not there, making nothing", async () => {
    const s = await chat("known");
    await expect(wait(s, { sessionRef: "session_nosuchsession00000000" })).rejects.toBeInstanceOf(NotFoundError);
    await expect(wait(s, { sessionRef: "no-such-external-id" })).rejects.toBeInstanceOf(NotFoundError);
  });
});
