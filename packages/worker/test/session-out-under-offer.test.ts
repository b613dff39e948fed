// A run offered the resume of its `.in` wait answers on `.out` without waiting for its offer to be
// taken (the append is fenced by the claim in its own statement): an offer withdrawn before that
// (the run canceled in the very transaction that offered it) stores nothing on `.out`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendRecords, startSession, withTransaction, type Pool } from "@svc/runtime/engine";
import { sessions, task } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;

const echo = task({
  id: "echo",
  run: async (payload: { sessionId: string }) => {
    const session = sessions.open<{ n: number }, { n: number }>(payload.sessionId);
    for (;;) {
      const message = await session.in.wait<{ n: number }>();
      if (!message.ok) return "closed";
      await session.out.append({ n: message.output.n });
    }
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [echo], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

const outRecords = async (sessionId: string) =>
  (await te.db.pool.query<{ seq: string; data: string }>(`SELECT seq, data FROM session_records WHERE session_id = $1 AND io = 'out' ORDER BY seq`, [sessionId])).rows;

async function waitingSession(externalId: string) {
  const suspended = tw.worker.events.next("runSuspended");
  const { session, runId } = await startSession(te.engine, te.env, { type: "chat", externalId, taskIdentifier: "echo", triggerConfig: { basePayload: {} } });
  expect((await suspended).runId).toBe(runId);
  return { sessionId: session.id, runId: runId! };
}

describe("a .out append under a resume offer", () => {
  it("answers a message (the offer taken meanwhile)", async () => {
    const { sessionId, runId } = await waitingSession("answered");
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === runId);
    const suspended = tw.worker.events.next("runSuspended", (e) => e.runId === runId);
    await appendRecords(te.engine, te.env, sessionId, "in", [{ data: '{"n":1}' }]);
    expect(await resumed).toMatchObject({ via: "offer" });
    await suspended;
    expect((await outRecords(sessionId)).map((r) => JSON.parse(r.data))).toEqual([{ n: 1 }]);
    expect((await getRunRow(te, runId)).status).toBe("WAITING");
  });

  it("stores nothing when the offer was withdrawn before the append", async () => {
    const { sessionId, runId } = await waitingSession("withdrawn");
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === runId);
    // The message resumes the run, offered to the worker; the cancel commits with it. (The append
    // is one statement on the transaction's connection: the session has its run, none is started.)
    await withTransaction(te.db.pool, async (tx) => {
      await appendRecords({ ...te.engine, db: tx as unknown as Pool }, te.env, sessionId, "in", [{ data: '{"n":2}' }]);
      await tx.query(`UPDATE runs SET status = 'CANCELED', claim_token = NULL, lease_expires_at = NULL, offered_at = NULL WHERE id = $1`, [runId]);
    });
    expect(["canceled", "fenced"]).toContain((await abandoned).reason);
    expect(await outRecords(sessionId)).toEqual([]);
    expect((await getRunRow(te, runId)).status).toBe("CANCELED");
  });
});
