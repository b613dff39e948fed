import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getEnvironment } from "@svc/runtime/engine";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { startListeningApi, type ListeningApi } from "./client-server.ts";
import { startTestApiOn } from "./harness.ts";
import { append, bearer, createSessionOk, drain } from "./sessions-helpers.ts";
import { envelope, sseRecords } from "./sse-reader.ts";

let api: ListeningApi;
beforeAll(async () => {
  api = await startListeningApi();
});
afterAll(async () => api?.close());

function subscribe(ref: string, io: "in" | "out", headers: Record<string, string> = {}, auth: Record<string, string> = api.devAuth) {
  return fetch(`${api.baseURL}/realtime/v1/sessions/${encodeURIComponent(ref)}/${io}`, { headers: { accept: "text/event-stream", ...auth, ...headers } });
}

describe("append and drain", () => {
  it("numbers records per channel, stores the raw body as a JSON string, and X-Part-Id stores a retried part once", async () => {
    const s = await createSessionOk(api);
    expect((await append(api, s.id, "in", `{"text":"a"}`)).json()).toEqual({ ok: true, seq: 1 });
    expect((await append(api, s.id, "in", `plain text`, { ...api.devAuth, "x-part-id": "part-1" })).json()).toEqual({ ok: true, seq: 2 });
    expect((await append(api, s.id, "in", `plain text`, { ...api.devAuth, "x-part-id": "part-1" })).json()).toEqual({ ok: true, seq: 2 });
    expect((await append(api, s.id, "out", `{"reply":1}`)).json()).toEqual({ ok: true, seq: 1 });
    const records = (await drain(api, s.id, "in")).json().records;
    expect(records).toEqual([
      { data: `{"text":"a"}`, id: expect.stringMatching(/^[a-z0-9]{21}$/), seqNum: 1 },
      { data: "plain text", id: "part-1", seqNum: 2 },
    ]);
    expect((await drain(api, s.id, "in", 1)).json().records.map((r: { seqNum: number }) => r.seqNum)).toEqual([2]);
    expect((await drain(api, s.id, "in", 2)).json().records).toEqual([]);
    expect((await drain(api, s.id, "out")).json().records).toEqual([{ data: `{"reply":1}`, id: expect.any(String), seqNum: 1 }]);
  });

  it("refuses bad input with a 4xx JSON error and writes nothing", async () => {
    const s = await createSessionOk(api);
    const tooBig = await append(api, s.id, "in", "x".repeat(1024 * 1024 + 1));
    expect(tooBig.statusCode).toBe(413);
    expect((await append(api, s.id, "in", "")).statusCode).toBe(400);
    expect((await append(api, s.id, "in", "x", { ...api.devAuth, "x-part-id": "has space" })).statusCode).toBe(400);
    expect((await append(api, s.id, "in", "x", { ...api.devAuth, "x-part-id": "p".repeat(129) })).statusCode).toBe(400);
    expect((await append(api, s.id, "sideways" as "in", "x")).statusCode).toBe(400);
    expect((await append(api, "session_unknown", "in", "x")).statusCode).toBe(404);
    for (const after of ["-1", "1.5", "abc", "9".repeat(16)]) {
      const res = await drain(api, s.id, "in", after);
      expect(res.statusCode, after).toBe(400);
      expect(res.json().error).toEqual(expect.any(String));
    }
    expect((await drain(api, s.id, "in")).json().records).toEqual([]);
    const exact = await append(api, s.id, "in", "y".repeat(1024 * 1024));
    expect(exact.statusCode).toBe(200);
  });

  it("refuses an .out append with a public token (403), even with write scope", async () => {
    const s = await createSessionOk(api);
    const res = await append(api, s.id, "out", "x", bearer(s.publicAccessToken));
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toMatch(/secret key/);
    expect((await append(api, s.id, "in", "x", bearer(s.publicAccessToken))).statusCode).toBe(200);
  });
});

describe("SSE subscribe", () => {
  it("sends what is there, then each append as it lands, in the SDK's v2 batch shape", async () => {
    const s = await createSessionOk(api, { externalId: "sse-live" });
    await append(api, s.id, "out", `{"n":1}`, { ...api.devAuth, "x-part-id": "p1" });
    const res = await subscribe("sse-live", "out", { "timeout-seconds": "30" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("x-stream-version")).toBe("v2");
    const stream = sseRecords(res);
    const [first] = await stream.next();
    expect(first).toMatchObject({ seq_num: 1, headers: [] });
    expect(envelope(first!)).toEqual({ data: `{"n":1}`, id: "p1" });
    await append(api, s.id, "out", `{"n":2}`);
    const [second] = await stream.next();
    expect(second!.seq_num).toBe(2);
    expect(envelope(second!).data).toBe(`{"n":2}`);
    await stream.cancel();
  });

  it("resumes after Last-Event-ID without losing or repeating a record", async () => {
    const s = await createSessionOk(api);
    for (let i = 1; i <= 5; i++) await append(api, s.id, "in", `m${i}`);
    const stream = sseRecords(await subscribe(s.id, "in", { "last-event-id": "3" }));
    const got = await stream.next(2);
    expect(got.map((r) => [r.seq_num, envelope(r).data])).toEqual([[4, "m4"], [5, "m5"]]);
    await append(api, s.id, "in", "m6");
    expect((await stream.next())[0]!.seq_num).toBe(6);
    expect(stream.pending).toBe(0);
    await stream.cancel();
  });

  it("ends the long poll after Timeout-Seconds", async () => {
    const s = await createSessionOk(api);
    const stream = sseRecords(await subscribe(s.id, "out", { "timeout-seconds": "1" }));
    await stream.ended;
    expect(stream.pending).toBe(0);
  });

  it("lets a client subscribe by externalId before the session exists", async () => {
    const res = await subscribe("not-yet", "out", { "timeout-seconds": "30" });
    expect(res.status).toBe(200);
    const stream = sseRecords(res);
    const s = await createSessionOk(api, { externalId: "not-yet" });
    await append(api, s.id, "out", "hello");
    const [record] = await stream.next();
    expect(envelope(record!).data).toBe("hello");
    await stream.cancel();
  });

  it("with X-Peek-Settled, closes at once when the last .out record is a turn-complete control record", async () => {
    const s = await createSessionOk(api);
    await append(api, s.id, "out", "answer");
    await api.db.pool.query(`UPDATE sessions SET out_seq = 2 WHERE id = $1`, [s.id]);
    await api.db.pool.query(
      `INSERT INTO session_records (session_id, io, seq, part_id, data, headers, created_at) VALUES ($1, 'out', 2, 'ctl', NULL, '[["trigger-control","turn-complete"]]', now())`,
      [s.id],
    );
    const res = await subscribe(s.id, "out", { "x-peek-settled": "1", "last-event-id": "1" });
    expect(res.headers.get("x-session-settled")).toBe("true");
    const stream = sseRecords(res);
    await stream.ended;
    const [control] = await stream.next();
    expect(control).toMatchObject({ seq_num: 2, body: "", headers: [["trigger-control", "turn-complete"]] });
  });

  it("refuses bad headers and unknown session ids with a JSON 4xx before any stream starts", async () => {
    const s = await createSessionOk(api);
    for (const headers of <Record<string, string>[]>[{ "timeout-seconds": "0" }, { "timeout-seconds": "601" }, { "timeout-seconds": "abc" }, { "last-event-id": "x1" }]) {
      const res = await subscribe(s.id, "out", headers);
      expect(res.status, JSON.stringify(headers)).toBe(400);
      expect(((await res.json()) as { error: unknown }).error).toEqual(expect.any(String));
    }
    const unknown = await subscribe("session_doesnotexist", "out");
    expect(unknown.status).toBe(404);
    const other = await createSessionOk(api);
    const foreign = await subscribe(s.id, "out", {}, bearer(other.publicAccessToken));
    expect(foreign.status).toBe(403);
  });

  it("delivers an append made through another API process (LISTEN/NOTIFY)", async () => {
    const s = await createSessionOk(api);
    const stream = sseRecords(await subscribe(s.id, "out", { "timeout-seconds": "30" }));
    // A second process on the same database: its own pool, its own listener.
    const other = await startTestApiOn(api);
    try {
      const res = await other.app.inject({ method: "POST", url: `/realtime/v1/sessions/${s.id}/out/append`, headers: { ...api.devAuth, "content-type": "text/plain" }, payload: "from afar" });
      expect(res.statusCode).toBe(200);
      const [record] = await stream.next();
      expect(envelope(record!).data).toBe("from afar");
    } finally {
      await other.close();
      await stream.cancel();
    }
  });

  it("accepts a public token scoped to either of the session's names", async () => {
    const s = await createSessionOk(api, { externalId: "two-names" });
    const env = (await getEnvironment(api.db.pool, api.project.environments.dev.id))!;
    const byId = await mintPublicToken(api.deps, env, [`read:sessions:${s.id}`]);
    const res = await subscribe("two-names", "out", { "timeout-seconds": "1" }, bearer(byId));
    expect(res.status).toBe(200);
    await sseRecords(res).ended;
  });
});
