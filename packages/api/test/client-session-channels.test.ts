// A session's channels through the client (append, records, subscribe), against the real API on
// a loopback port. A pass-through fetch lets a test see each request and stand in for the network
// failing at a chosen moment.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { appendRecord, getEnvironment } from "@svc/runtime/engine";
import {
  ApiClient,
  ApiConnectionError,
  BadRequestError,
  configure,
  controlSubtype,
  InternalServerError,
  NotFoundError,
  parseRecordData,
  PermissionDeniedError,
  sessionsClient,
  type ApiError,
  type SessionRecord,
} from "@svc/runtime";
import { clearServiceEnvironment, NO_RETRY, startListeningApi, type ListeningApi } from "./client-server.ts";

let api: ListeningApi;

beforeAll(async () => {
  api = await startListeningApi();
});
afterAll(async () => api?.close());
beforeEach(() => {
  clearServiceEnvironment();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
});

const FAST_RETRY = { minTimeoutInMs: 1, maxTimeoutInMs: 5, randomize: false };

function start(externalId?: string) {
  return sessionsClient.start({ type: "chat.agent", taskIdentifier: "chat-agent", triggerConfig: { basePayload: {} }, ...(externalId ? { externalId } : {}) });
}

interface Call {
  method: string;
  url: string;
  headers: Headers;
  signal: AbortSignal | undefined;
}

/**
 * A fetch that forwards to the real one and records each call. `intercept(call, n, forward)` may
 * answer the nth call (1-based) itself; `called(n)` resolves when the nth call is made.
 */
function passThroughFetch(intercept?: (call: Call, n: number, forward: () => Promise<Response>) => Promise<Response>) {
  const calls: Call[] = [];
  const waiting = new Map<number, () => void>();
  const fetchImpl = (async (input: string | URL | Request, init?: RequestInit) => {
    const call: Call = { method: init?.method ?? "GET", url: String(input), headers: new Headers(init?.headers), signal: init?.signal ?? undefined };
    const n = calls.push(call);
    waiting.get(n)?.();
    const forward = () => fetch(input, init);
    return intercept ? intercept(call, n, forward) : forward();
  }) as typeof fetch;
  return {
    fetch: fetchImpl,
    calls,
    called: (n: number) => (calls.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiting.set(n, resolve))),
  };
}

function clientWith(fetchImpl: typeof fetch, retry: Record<string, unknown> = { maxAttempts: 1 }) {
  return new ApiClient({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { fetch: fetchImpl, retry } });
}

async function firstError(records: AsyncIterable<SessionRecord>): Promise<unknown> {
  try {
    for await (const record of records) throw new Error(`expected an error, got record ${record.seq}`);
  } catch (error) {
    return error;
  }
  throw new Error("expected an error, the subscription ended");
}

describe("append and records", () => {
  it("sends a string as it is and anything else as JSON; records hands back data as stored, parseRecordData reads it", async () => {
    const s = await start();
    const first = await sessionsClient.append(s.id, "in", "plain words");
    expect(first).toEqual({ seq: 1, id: expect.stringMatching(/^[\w-]{21}$/) });
    expect(await sessionsClient.append(s.id, "in", { text: "hi" })).toMatchObject({ seq: 2 });
    expect(await sessionsClient.append(s.id, "in", 42, { partId: "answer" })).toEqual({ seq: 3, id: "answer" });
    expect(await sessionsClient.append(s.id, "out", ["reply"])).toMatchObject({ seq: 1 });

    const records = await sessionsClient.records(s.id, "in");
    expect(records).toEqual([
      { seq: 1, id: first.id, data: "plain words" },
      { seq: 2, id: expect.any(String), data: `{"text":"hi"}` },
      { seq: 3, id: "answer", data: "42" },
    ]);
    expect(records.map((r) => parseRecordData(r.data))).toEqual(["plain words", { text: "hi" }, 42]);
    expect((await sessionsClient.records(s.id, "in", { afterEventId: 2 })).map((r) => r.seq)).toEqual([3]);
    expect(await sessionsClient.records(s.id, "in", { afterEventId: "3" })).toEqual([]);
    expect(await sessionsClient.records(s.id, "out")).toEqual([{ seq: 1, id: expect.any(String), data: `["reply"]` }]);
  });

  it("stores a record once when the same part id is appended again", async () => {
    const s = await start();
    expect(await sessionsClient.append(s.id, "in", "once", { partId: "part-1" })).toEqual({ seq: 1, id: "part-1" });
    expect(await sessionsClient.append(s.id, "in", "once", { partId: "part-1" })).toEqual({ seq: 1, id: "part-1" });
    expect(await sessionsClient.records(s.id, "in")).toHaveLength(1);
  });

  it("retries an append whose answer was lost with the same generated part id, and the record is stored once", async () => {
    const s = await start();
    const net = passThroughFetch(async (_call, n, forward) => {
      const response = await forward();
      // The first attempt reached the server; its answer is lost on the way back.
      return n === 1 ? new Response(JSON.stringify({ error: "bad gateway" }), { status: 502, headers: { "content-type": "application/json" } }) : response;
    });
    const client = clientWith(net.fetch, { ...FAST_RETRY, maxAttempts: 2 });
    const appended = await client.sessions.append(s.id, "in", { text: "exactly once" });
    expect(net.calls).toHaveLength(2);
    expect(net.calls[1]!.headers.get("x-part-id")).toBe(net.calls[0]!.headers.get("x-part-id"));
    expect(appended).toEqual({ seq: 1, id: net.calls[0]!.headers.get("x-part-id") });
    expect(await sessionsClient.records(s.id, "in")).toEqual([{ seq: 1, id: appended.id, data: `{"text":"exactly once"}` }]);
    // A second logical call is a second record, with a part id of its own.
    const next = await client.sessions.append(s.id, "in", { text: "exactly once" });
    expect(next.seq).toBe(2);
    expect(next.id).not.toBe(appended.id);
  });

  it("surfaces refusals as their ApiError subclass", async () => {
    const s = await start();
    await expect(sessionsClient.append(s.id, "in", "")).rejects.toBeInstanceOf(BadRequestError);
    await expect(sessionsClient.append(s.id, "in", undefined)).rejects.toBeInstanceOf(BadRequestError);
    await expect(sessionsClient.append(s.id, "in", "x", { partId: "has space" })).rejects.toBeInstanceOf(BadRequestError);
    await expect(sessionsClient.append(s.id, "in", "x".repeat(1024 * 1024 + 1))).rejects.toMatchObject({ status: 413 });
    await expect(sessionsClient.append("session_missing", "in", "x")).rejects.toBeInstanceOf(NotFoundError);
    await expect(sessionsClient.records("session_missing", "in")).rejects.toBeInstanceOf(NotFoundError);
    await expect(sessionsClient.records(s.id, "in", { afterEventId: "abc" })).rejects.toBeInstanceOf(BadRequestError);
    const browser = new ApiClient({ baseURL: api.baseURL, accessToken: s.publicAccessToken, requestOptions: NO_RETRY });
    const outRefused = await browser.sessions.append(s.id, "out", "x").catch((e) => e);
    expect(outRefused).toBeInstanceOf(PermissionDeniedError);
    expect(outRefused.message).toMatch(/secret key/);
    expect(await browser.sessions.append(s.id, "in", "from the browser")).toMatchObject({ seq: 1 });
    await sessionsClient.close(s.id);
    const closed = await sessionsClient.append(s.id, "in", "late").catch((e) => e);
    expect(closed).toBeInstanceOf(BadRequestError);
    expect(closed.message).toMatch(/closed/);
  });
});

describe("subscribe", () => {
  it("yields what is there, then each record as it lands, control records included; leaving the loop closes the connection", async () => {
    const net = passThroughFetch();
    const client = clientWith(net.fetch);
    // Subscribing by externalId before the session exists is allowed.
    const records = client.sessions.subscribe("client-live", "out", { timeoutSeconds: 30 })[Symbol.asyncIterator]();
    const first = records.next();
    await net.called(1);
    const s = await start("client-live");
    await sessionsClient.append(s.id, "out", { n: 1 }, { partId: "p1" });
    expect((await first).value).toEqual({ seq: 1, id: "p1", data: `{"n":1}` });
    await sessionsClient.append("client-live", "out", "two");
    expect((await records.next()).value).toEqual({ seq: 2, id: expect.any(String), data: "two" });
    const env = (await getEnvironment(api.db.pool, api.project.environments.dev.id))!;
    await appendRecord(api.engine, env, s.id, { io: "out", data: null, headers: [["trigger-control", "turn-complete"]] });
    const control = (await records.next()).value as SessionRecord;
    expect(control).toEqual({ seq: 3, id: "", data: null, headers: [["trigger-control", "turn-complete"]] });
    expect(controlSubtype(control)).toBe("turn-complete");
    await records.return!(undefined);
    expect(net.calls).toHaveLength(1);
    expect(net.calls[0]!.signal!.aborted).toBe(true);
    expect(net.calls[0]!.headers.get("accept")).toBe("text/event-stream");
    expect(net.calls[0]!.headers.get("authorization")).toBe(`Bearer ${api.project.environments.dev.secretKey}`);

    // The same records as the drain reads them (which knows the control record's part id).
    const drained = await sessionsClient.records(s.id, "out");
    expect(drained.slice(0, 2)).toEqual([{ seq: 1, id: "p1", data: `{"n":1}` }, { seq: 2, id: expect.any(String), data: "two" }]);
    expect(drained[2]).toMatchObject({ seq: 3, data: null, headers: [["trigger-control", "turn-complete"]] });

    const after = sessionsClient.subscribe(s.id, "out", { lastEventId: 1 })[Symbol.asyncIterator]();
    expect((await after.next()).value).toMatchObject({ seq: 2, data: "two" });
    await after.return!(undefined);
  });

  it("reconnects after a server-ended long poll with Last-Event-ID, without losing or repeating a record", async () => {
    const s = await start();
    let reconnect!: () => void;
    const gate = new Promise<void>((resolve) => (reconnect = resolve));
    const net = passThroughFetch(async (_call, n, forward) => {
      if (n === 2) await gate;
      return forward();
    });
    const client = clientWith(net.fetch);
    await sessionsClient.append(s.id, "in", "r1");
    const records = client.sessions.subscribe(s.id, "in", { timeoutSeconds: 1 })[Symbol.asyncIterator]();
    expect((await records.next()).value).toMatchObject({ seq: 1, data: "r1" });
    await sessionsClient.append(s.id, "in", "r2");
    expect((await records.next()).value).toMatchObject({ seq: 2, data: "r2" });
    const pending = records.next();
    // The server ends the poll after a second; the client asks again, and is held back while
    // a record lands in between.
    await net.called(2);
    await sessionsClient.append(s.id, "in", "r3");
    reconnect();
    expect((await pending).value).toMatchObject({ seq: 3, data: "r3" });
    await sessionsClient.append(s.id, "in", "r4");
    expect((await records.next()).value).toMatchObject({ seq: 4, data: "r4" });
    expect(net.calls[1]!.headers.get("last-event-id")).toBe("2");
    expect(net.calls[1]!.headers.get("timeout-seconds")).toBe("1");
    expect(net.calls[0]!.headers.get("last-event-id")).toBeNull();
    await records.return!(undefined);
  });

  it("reconnects after a dropped connection and a 503, telling onError, and resumes after the last record", async () => {
    const s = await start();
    let drop!: () => void;
    const dropped = new Promise<void>((resolve) => (drop = resolve));
    const net = passThroughFetch(async (_call, n, forward) => {
      if (n === 2) return new Response(JSON.stringify({ error: "restarting" }), { status: 503, headers: { "content-type": "application/json" } });
      const response = await forward();
      return n === 1 ? new Response(cutAfterFirstBatch(response.body!, dropped), { headers: response.headers }) : response;
    });
    const errors: ApiError[] = [];
    const client = clientWith(net.fetch, FAST_RETRY);
    await sessionsClient.append(s.id, "out", "r1");
    const records = client.sessions.subscribe(s.id, "out", { timeoutSeconds: 30, onError: (error) => errors.push(error) })[Symbol.asyncIterator]();
    expect((await records.next()).value).toMatchObject({ seq: 1, data: "r1" });
    const pending = records.next();
    drop();
    await net.called(3);
    await sessionsClient.append(s.id, "out", "r2");
    expect((await pending).value).toMatchObject({ seq: 2, data: "r2" });
    expect(errors.map((e) => e.constructor)).toEqual([ApiConnectionError, InternalServerError]);
    expect(errors[1]!.message).toBe("restarting");
    expect(net.calls[2]!.headers.get("last-event-id")).toBe("1");
    await records.return!(undefined);
  });

  it("ends the loop without an error when the signal aborts while waiting", async () => {
    const s = await start();
    const net = passThroughFetch();
    const controller = new AbortController();
    const seen: number[] = [];
    await sessionsClient.append(s.id, "out", "r1");
    const loop = (async () => {
      for await (const record of clientWith(net.fetch).sessions.subscribe(s.id, "out", { signal: controller.signal })) {
        seen.push(record.seq);
        if (seen.length === 1) controller.abort();
      }
    })();
    await loop;
    expect(seen).toEqual([1]);
    expect(net.calls[0]!.signal!.aborted).toBe(true);
    // An already-aborted signal never connects.
    for await (const record of sessionsClient.subscribe(s.id, "out", { signal: controller.signal })) throw new Error(`got ${record.seq}`);
  });

  it("ends with the mapped ApiError on a 4xx other than 408/429", async () => {
    const s = await start();
    const other = await start();
    expect(await firstError(sessionsClient.subscribe("session_doesnotexist", "out"))).toBeInstanceOf(NotFoundError);
    const badTimeout = await firstError(sessionsClient.subscribe(s.id, "out", { timeoutSeconds: 0 }));
    expect(badTimeout).toBeInstanceOf(BadRequestError);
    expect((badTimeout as Error).message).toMatch(/Timeout-Seconds/);
    expect(await firstError(sessionsClient.subscribe(s.id, "out", { lastEventId: "x1" }))).toBeInstanceOf(BadRequestError);
    const foreign = new ApiClient({ baseURL: api.baseURL, accessToken: other.publicAccessToken, requestOptions: NO_RETRY });
    expect(await firstError(foreign.sessions.subscribe(s.id, "out"))).toBeInstanceOf(PermissionDeniedError);
  });
});

/**
 * The body of a response that passes chunks through until it has passed an `event: batch`, then
 * fails as a dropped connection does once `drop` resolves (and lets the real response go).
 */
function cutAfterFirstBatch(body: ReadableStream<Uint8Array>, drop: Promise<void>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let passedBatch = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (passedBatch) {
        await drop;
        await reader.cancel();
        controller.error(new TypeError("terminated"));
        return;
      }
      const { done, value } = await reader.read();
      if (done) return controller.close();
      if (decoder.decode(value, { stream: true }).includes("event: batch")) passedBatch = true;
      controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
