import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, configure, sessions, task, TURN_COMPLETE } from "../packages/runtime/src/index.ts";
import { startTestWorker, type TestWorker } from "../packages/worker/test/harness.ts";
import { startTestApi, type TestApi } from "../packages/api/test/harness.ts";
import { bearer } from "../packages/api/test/sessions-helpers.ts";
import { envelope, sseRecords } from "../packages/api/test/sse-reader.ts";

// A chat end to end, the API and a real worker together: the task loops on session.in.wait (a
// checkpoint each time), answers on .out and ends each turn with a turn-complete control record;
// the browser side holds only the session's public token.
let api: TestApi;
let tw: TestWorker;
let baseURL: string;

const chat = task({
  id: "chat-agent",
  run: async (payload: { sessionId: string }) => {
    const session = sessions.open<{ text: string }, { text: string }>(payload.sessionId);
    for (let turn = 0; ; turn++) {
      const message = await session.in.wait<{ text: string }>({ timeout: "1h" });
      if (!message.ok) return { turns: turn, ended: message.error.message };
      const writer = session.out.writer<{ text: string }>();
      for (const word of `echo: ${message.output.text}`.split(" ")) writer.write({ text: word });
      await writer.close();
      await session.out.writeControl("turn-complete");
    }
  },
});

const peeker = task({
  id: "peeker",
  run: async (payload: { sessionId: string }) => {
    const session = sessions.open(payload.sessionId);
    const first = await session.in.peek();
    const waited = await session.in.wait();
    return { first: first ?? null, waited: waited.ok ? waited.output : null };
  },
});

const trimmer = task({
  id: "trimmer",
  run: async (payload: { sessionId: string }) => {
    const session = sessions.open(payload.sessionId);
    for (const n of [1, 2, 3]) await session.out.append({ n });
    await session.out.trimTo(3);
    await session.out.trimTo(1); // lower: changes nothing
    await session.in.wait(); // a replay after this trims again, harmlessly
    return "done";
  },
});

const onceThenWait = task({
  id: "once-then-wait",
  run: async (payload: { sessionId: string }) => {
    const session = sessions.open(payload.sessionId);
    const first = await session.in.once({ timeout: "30s" }); // keeps the slot
    const second = await session.in.wait({ timeout: "1h" }); // a checkpoint: the resume replays the once
    const third = await session.in.once({ timeout: 20 });
    return { first: first.ok ? first.output : null, second: second.ok ? second.output : null, third: third.ok ? third.output : third.error.message };
  },
});

beforeAll(async () => {
  api = await startTestApi();
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  baseURL = `http://127.0.0.1:${(api.app.server.address() as { port: number }).port}`;
  api.engine.apiUrl = baseURL;
  tw = await startTestWorker(api, [chat, peeker, trimmer, onceThenWait]);
  tw.worker.events.on("runSuspended", (e) => suspendedRuns.add(e.runId));
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey });
});
afterAll(async () => {
  await tw?.stop();
  await api?.close();
});

async function start(taskIdentifier: string, externalId: string) {
  const res = await fetch(`${baseURL}/api/v1/sessions`, {
    method: "POST",
    headers: { ...api.devAuth, "content-type": "application/json" },
    body: JSON.stringify({ type: "chat.agent", externalId, taskIdentifier, triggerConfig: { basePayload: {} } }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; runId: string; publicAccessToken: string };
}

async function send(ref: string, token: string, value: unknown) {
  const res = await fetch(`${baseURL}/realtime/v1/sessions/${ref}/in/append`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": "application/json" },
    body: JSON.stringify(value),
  });
  expect(res.status).toBe(200);
}

async function outRecords(sessionId: string) {
  const { rows } = await api.db.pool.query(`SELECT seq, part_id, data, headers FROM session_records WHERE session_id = $1 AND io = 'out' ORDER BY seq`, [sessionId]);
  return rows;
}

/** Runs the worker suspended so far: a session's run may suspend before the start's answer arrives. */
const suspendedRuns = new Set<string>();
async function firstSuspension(runId: string): Promise<void> {
  if (!suspendedRuns.has(runId)) await tw.worker.events.next("runSuspended", (e) => e.runId === runId);
}

describe("a chat on a session", () => {
  it("answers each message on .out, checkpointed between messages, and writes no record twice across resumes", async () => {
    const session = await start("chat-agent", "chat-e2e");
    await firstSuspension(session.runId);
    const res = await fetch(`${baseURL}/realtime/v1/sessions/chat-e2e/out`, { headers: { ...bearer(session.publicAccessToken), "timeout-seconds": "60" } });
    expect(res.status).toBe(200);
    const stream = sseRecords(res);
    for (const text of ["hello there", "second message", "third"]) {
      const suspended = tw.worker.events.next("runSuspended", (e) => e.runId === session.runId);
      await send("chat-e2e", session.publicAccessToken, { text });
      const words = `echo: ${text}`.split(" ");
      const got = await stream.next(words.length + 1);
      expect(got.slice(0, words.length).map((r) => (envelope(r).data as { text: string }).text)).toEqual(words);
      expect(got[words.length]).toMatchObject({ body: "", headers: [["trigger-control", "turn-complete"]] });
      await suspended;
      const { rows } = await api.db.pool.query(`SELECT status FROM runs WHERE id = $1`, [session.runId]);
      expect(rows[0].status).toBe("WAITING");
    }
    const stored = await outRecords(session.id);
    // 3 + 3 + 2 words and a control record per turn, each once, numbered without gaps.
    expect(stored).toHaveLength(4 + 4 + 3);
    expect(stored.map((r) => Number(r.seq))).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(new Set(stored.map((r) => r.part_id)).size).toBe(11);
    // Each wait's ledger outcome says how many .out records the run had appended before it: what
    // lets each replay skip them without asking the database.
    const ledger = await api.db.pool.query(`SELECT outcome->'outAppended' AS n FROM run_ledger WHERE run_id = $1 AND kind = 'session' ORDER BY step_key`, [session.runId]);
    expect(ledger.rows.map((r) => r.n)).toEqual([0, 4, 8, null]);
    await stream.cancel();

    const finished = tw.worker.events.next("runFinished", (e) => e.runId === session.runId);
    const closed = await fetch(`${baseURL}/api/v1/sessions/chat-e2e/close`, { method: "POST", headers: { ...api.devAuth, "content-type": "application/json" }, body: "{}" });
    expect(closed.status).toBe(200);
    expect((await finished).status).toBe("COMPLETED");
    const run: any = await (await fetch(`${baseURL}/api/v3/runs/${session.runId}`, { headers: api.devAuth })).json();
    // One attempt: the replay after the close re-appended nothing (its parts were all stored).
    const attempts = await api.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1 ORDER BY number`, [session.runId]);
    expect(attempts.rows).toEqual([{ number: 1, status: "COMPLETED" }]);
    const last = await api.db.pool.query(`SELECT outcome FROM run_ledger WHERE run_id = $1 AND step_key = '#3'`, [session.runId]);
    expect(last.rows[0].outcome).toMatchObject({ ok: false, outAppended: 11, error: { code: "SESSION_CLOSED" } });
    expect(run.output).toEqual({ turns: 3, ended: "The session was closed" });
  });

  it("a message sent before the run waits is returned at once; peek shows it without taking it", async () => {
    const session = await start("peeker", "peek-e2e");
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === session.runId);
    await send("peek-e2e", session.publicAccessToken, { text: "early" });
    expect((await finished).status).toBe("COMPLETED");
    const run: any = await (await fetch(`${baseURL}/api/v3/runs/${session.runId}`, { headers: api.devAuth })).json();
    // The peek may run before the message arrived (null) or after; the wait always gets it.
    expect(run.output.waited).toEqual({ text: "early" });
    expect([null, { text: "early" }]).toContainEqual(run.output.first);
  });

  it("a run that ended is followed by a new one when the next message arrives, which reads that message", async () => {
    const session = await start("peeker", "restart-e2e");
    let finished = tw.worker.events.next("runFinished", (e) => e.runId === session.runId);
    await send("restart-e2e", session.publicAccessToken, "one");
    await finished;
    await send("restart-e2e", session.publicAccessToken, "two");
    const current = ((await (await fetch(`${baseURL}/api/v1/sessions/restart-e2e`, { headers: api.devAuth })).json()) as { currentRunId: string }).currentRunId;
    expect(current).not.toBe(session.runId);
    finished = tw.worker.events.next("runFinished", (e) => e.runId === current);
    await finished;
    const run: any = await (await fetch(`${baseURL}/api/v3/runs/${current}`, { headers: api.devAuth })).json();
    expect(run.output.waited).toBe("two");
  });

  it("trimTo drops .out records below a sequence number, once, also across a replay", async () => {
    const session = await start("trimmer", "trim-e2e");
    await firstSuspension(session.runId);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === session.runId);
    await send("trim-e2e", session.publicAccessToken, "go");
    expect((await finished).status).toBe("COMPLETED");
    expect((await outRecords(session.id)).map((r) => Number(r.seq))).toEqual([3]);
    const drained = await (await fetch(`${baseURL}/realtime/v1/sessions/trim-e2e/out/records`, { headers: bearer(session.publicAccessToken) })).json();
    expect(drained).toEqual({ records: [{ data: { n: 3 }, id: expect.any(String), seqNum: 3 }] });
  });

  it("with svc's own client: the backend starts the session, the browser side (public token) sends and reads", async () => {
    const started = await sessions.start({ type: "chat.agent", externalId: "own-client", taskIdentifier: "chat-agent", triggerConfig: { basePayload: {} } });
    await firstSuspension(started.runId);
    const replies: string[] = [];
    await auth.withAuth({ secretKey: undefined, accessToken: started.publicAccessToken }, async () => {
      const session = sessions.open<{ text: string }, { text: string }>("own-client");
      const abort = new AbortController();
      const reading = (async () => {
        for await (const record of session.out.subscribe({ signal: abort.signal })) {
          if (record.headers?.some(([name, value]) => name === "trigger-control" && value === TURN_COMPLETE)) break;
          replies.push((record.data as { text: string }).text);
        }
      })();
      await session.in.append({ text: "from the client" });
      await reading;
      abort.abort();
    });
    expect(replies).toEqual(["echo:", "from", "the", "client"]);
    await sessions.close("own-client");
    expect((await sessions.retrieve("own-client")).closedAt).not.toBeNull();
  });

  it("session.in.once waits keeping the slot, is replayed from the ledger after a checkpoint, and times out", async () => {
    const started = tw.worker.events.next("runStarted");
    const session = await start("once-then-wait", "once-e2e");
    await started;
    const suspended = tw.worker.events.next("runSuspended", (e) => e.runId === session.runId);
    await send("once-e2e", session.publicAccessToken, { n: 1 });
    await suspended; // the once returned without a checkpoint; the wait after it suspended
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === session.runId);
    await send("once-e2e", session.publicAccessToken, { n: 2 });
    expect((await finished).status).toBe("COMPLETED");
    const run: any = await (await fetch(`${baseURL}/api/v3/runs/${session.runId}`, { headers: api.devAuth })).json();
    expect(run.output).toEqual({ first: { n: 1 }, second: { n: 2 }, third: "session.in.once() timed out" });
    const steps = await api.db.pool.query(`SELECT kind, target FROM run_ledger WHERE run_id = $1 ORDER BY step_key`, [session.runId]);
    expect(steps.rows).toEqual([
      { kind: "step", target: "session.in.once" },
      { kind: "session", target: `${session.id}:in` },
      { kind: "step", target: "session.in.once" },
    ]);
  });
});
