import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

async function trigger(body: unknown, headers: Record<string, string> = api.devAuth, taskId = "hello-world") {
  return api.app.inject({ method: "POST", url: `/api/v1/tasks/${taskId}/trigger`, headers, payload: body as object });
}

describe("POST /api/v1/tasks/{taskId}/trigger", () => {
  it("creates a QUEUED run for an unknown task and returns its id", async () => {
    const res = await trigger({ payload: { name: "Ada" } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.id).toMatch(/^run_/);
    expect(body.isCached).toBe(false);
    expect(res.headers["x-trigger-jwt"]).toBeTypeOf("string");
    const { rows } = await api.db.pool.query("SELECT status, payload, queue_name FROM runs WHERE id = $1", [body.id]);
    expect(rows[0]).toMatchObject({ status: "QUEUED", payload: '{"name":"Ada"}', queue_name: "task/hello-world" });
  });

  it("rejects a missing or unknown secret key with 401", async () => {
    expect((await trigger({ payload: 1 }, {})).statusCode).toBe(401);
    const res = await trigger({ payload: 1 }, { authorization: "Bearer svc_dev_nope" });
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toMatch(/Invalid API key/);
  });

  it("returns the same run for the same idempotency key", async () => {
    const first = (await trigger({ payload: 1, options: { idempotencyKey: "k-1" } })).json();
    const second = (await trigger({ payload: 2, options: { idempotencyKey: "k-1" } })).json();
    expect(second).toEqual({ id: first.id, isCached: true });
  });

  it("answers bad input with a 4xx and a clear message", async () => {
    const tooManyTags = await trigger({ payload: 1, options: { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) } });
    expect(tooManyTags.statusCode).toBe(422);
    expect(tooManyTags.json().error).toMatch(/10 tags/);
    const badDelay = await trigger({ payload: 1, options: { delay: "soonish" } });
    expect(badDelay.statusCode).toBe(400);
    expect(badDelay.json().error).toMatch(/delay/);
    const notJson = await api.app.inject({
      method: "POST",
      url: "/api/v1/tasks/x/trigger",
      headers: { ...api.devAuth, "content-type": "application/json" },
      payload: "{nope",
    });
    expect(notJson.statusCode).toBe(400);
    const empty = await api.app.inject({ method: "POST", url: "/api/v1/tasks/x/trigger", headers: { ...api.devAuth, "content-type": "application/json" } });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toBe("Request body is empty");
  });
});

describe("bodies that are not JSON", () => {
  // A Buffer (any Content-Type without a JSON parser) is an object to zod: the run used to be
  // created without the payload and options that were sent, as if the body were {}.
  it("answers a JSON text sent as a form, multipart or octet-stream body with 415, creating nothing", async () => {
    const before = (await api.db.pool.query("SELECT count(*)::int AS n FROM runs")).rows[0].n;
    for (const contentType of ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/octet-stream"]) {
      const res = await api.app.inject({
        method: "POST",
        url: "/api/v1/tasks/hello-world/trigger",
        headers: { ...api.devAuth, "content-type": contentType },
        payload: JSON.stringify({ payload: { name: "Ada" } }),
      });
      expect(res.statusCode, contentType).toBe(415);
      expect(res.json()).toEqual({ error: `Content-Type must be application/json (got ${contentType.split(";")[0]})` });
    }
    const text = await api.app.inject({
      method: "POST",
      url: "/api/v1/tasks/hello-world/trigger",
      headers: { ...api.devAuth, "content-type": "text/plain" },
      payload: JSON.stringify({ payload: 1 }),
    });
    expect(text.statusCode).toBe(415);
    expect((await api.db.pool.query("SELECT count(*)::int AS n FROM runs")).rows[0].n).toBe(before);
  });
});

describe("input Postgres cannot store", () => {
  it("answers a NUL character in a task id, tag or metadata with 400, not 500", async () => {
    const inTaskId = await api.app.inject({ method: "POST", url: "/api/v1/tasks/a%00b/trigger", headers: api.devAuth, payload: { payload: 1 } });
    expect(inTaskId.statusCode).toBe(400);
    const inTag = await trigger({ payload: 1, options: { tags: ["a\u0000b"] } });
    expect(inTag.statusCode).toBe(400);
    const inMetadata = await trigger({ payload: 1, options: { metadata: { k: "a\u0000b" } } });
    expect(inMetadata.statusCode).toBe(400);
    expect(inMetadata.json().error).toBe("Invalid request body: options.metadata.k: must not contain NUL characters");
  });

  it("answers a NUL or half a surrogate pair with the same 400 on every field, the payload's included", async () => {
    const NUL = "must not contain NUL characters";
    const HALF = "must be valid Unicode (it holds half a surrogate pair)";
    const sessionBody = (extra: object) => ({ type: "chat", taskIdentifier: "hello-world", triggerConfig: { basePayload: {} }, ...extra });
    const cases: [string, string, unknown, string][] = [
      // [url, what, body, expected error]
      ["/api/v1/tasks/hello-world/trigger", "payload value", { payload: { note: "a\u0000b" } }, `Invalid request body: payload.note: ${NUL}`],
      ["/api/v1/tasks/hello-world/trigger", "payload value", { payload: { note: "cut \ud800" } }, `Invalid request body: payload.note: ${HALF}`],
      ["/api/v1/tasks/hello-world/trigger", "payload property name", { payload: { "k\u0000": 1 } }, `Invalid request body: payload: a property name ${NUL}`],
      ["/api/v1/tasks/hello-world/trigger", "payload as JSON text (the SDK's form)", { payload: JSON.stringify({ note: "a\u0000b" }) }, `payload: note: ${NUL}`],
      ["/api/v1/tasks/hello-world/trigger", "payload as JSON text (the SDK's form)", { payload: JSON.stringify({ note: "cut \ud800" }) }, `payload: note: ${HALF}`],
      ["/api/v1/tasks/hello-world/trigger", "payload as superjson text", { payload: JSON.stringify({ json: { note: "a\u0000b" } }), options: { payloadType: "application/super+json" } }, `payload: json.note: ${NUL}`],
      ["/api/v1/tasks/hello-world/trigger", "metadata", { payload: 1, options: { metadata: { k: "cut \ud800" } } }, `Invalid request body: options.metadata.k: ${HALF}`],
      ["/api/v1/tasks/hello-world/trigger", "tags", { payload: 1, options: { tags: ["a\u0000b"] } }, `Invalid request body: options.tags.0: ${NUL}`],
      ["/api/v1/tasks/hello-world/trigger", "idempotency key", { payload: 1, options: { idempotencyKey: "cut \ud800" } }, `Invalid request body: options.idempotencyKey: ${HALF}`],
      ["/api/v1/waitpoints/tokens", "token tags", { tags: ["cut \ud800"] }, `Invalid request body: tags.0: ${HALF}`],
      ["/api/v1/sessions", "session metadata", sessionBody({ metadata: { k: "a\u0000b" } }), `Invalid request body: metadata.k: ${NUL}`],
      ["/api/v1/sessions", "session basePayload", sessionBody({ triggerConfig: { basePayload: { k: "cut \ud800" } } }), `Invalid request body: triggerConfig.basePayload.k: ${HALF}`],
    ];
    const before = (await api.db.pool.query("SELECT count(*)::int AS n FROM runs")).rows[0].n;
    for (const [url, what, body, error] of cases) {
      const res = await api.app.inject({ method: "POST", url, headers: api.devAuth, payload: body as object });
      expect(res.statusCode, what).toBe(400);
      expect(res.json().error, what).toBe(error);
    }
    expect((await api.db.pool.query("SELECT count(*)::int AS n FROM runs")).rows[0].n).toBe(before);
    // Nothing about the rule stops what it allows: a whole surrogate pair, and the escape of a backslash.
    const fine = await trigger({ payload: { note: "💩 \\u0000 \\ud800" } });
    expect(fine.statusCode).toBe(200);
    const run = await api.app.inject({ method: "GET", url: `/api/v3/runs/${fine.json().id}`, headers: api.devAuth });
    expect(run.json().payload).toEqual({ note: "💩 \\u0000 \\ud800" });
  });

  it("answers a NUL in a session record with the same 400", async () => {
    const created = await api.app.inject({ method: "POST", url: "/api/v1/sessions", headers: api.devAuth, payload: { type: "chat", taskIdentifier: "hello-world", triggerConfig: { basePayload: {} } } });
    const res = await api.app.inject({ method: "POST", url: `/realtime/v1/sessions/${created.json().id}/in/append`, headers: { ...api.devAuth, "content-type": "text/plain" }, payload: "a\u0000b" });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe("Invalid request body: the record must not contain NUL characters");
  });

  it("answers half a surrogate pair in a stored string with 400 rather than storing U+FFFD", async () => {
    const before = (await api.db.pool.query("SELECT count(*)::int AS n FROM runs")).rows[0].n;
    const cases: [unknown, RegExp][] = [
      [{ options: { idempotencyKey: "key-\ud83d" } }, /options\.idempotencyKey: must be valid Unicode/],
      [{ options: { idempotencyKey: "k", idempotencyKeyOptions: { key: "key-\ud83d" } } }, /options\.idempotencyKeyOptions\.key: must be valid Unicode/],
      [{ options: { concurrencyKey: "user-\udc00" } }, /options\.concurrencyKey/],
      [{ options: { queue: { name: "q-\ud83d" } } }, /options\.queue\.name: must be valid Unicode/],
      [{ options: { tags: ["tag-\ud83d"] } }, /options\.tags/],
      [{ payload: "cut \ud83d", options: { payloadType: "text/plain" } }, /payload: must be valid Unicode/],
      [{ payload: '"cut \ud83d"' }, /payload: must be valid Unicode/],
    ];
    for (const [body, message] of cases) {
      const res = await trigger(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toMatch(message);
    }
    const inTaskId = await api.app.inject({ method: "POST", url: "/api/v1/tasks/a%00b/trigger", headers: api.devAuth, payload: { payload: 1 } });
    expect(inTaskId.json().error).toMatch(/taskId: must not contain NUL/);
    expect((await api.db.pool.query("SELECT count(*)::int AS n FROM runs")).rows[0].n).toBe(before);
  });

  it("answers an idempotency key too large for its index with 400 (was a 500); a 2048-byte key works", async () => {
    const cjk = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join("");
    const wide = await trigger({ payload: 1, options: { idempotencyKey: cjk(2048) } });
    expect(wide.statusCode).toBe(400);
    expect(wide.json().error).toMatch(/options\.idempotencyKey: must be 2048 bytes or less in UTF-8/);
    const header = await trigger({ payload: 1 }, { ...api.devAuth, "idempotency-key": "x".repeat(2049) });
    expect(header.statusCode).toBe(400);
    expect(header.json().error).toMatch(/^Idempotency-Key header: must be 2048 characters or less/);
    // The largest key, with the longest task id of 3-byte characters, fits the (env, task, key) index.
    const largest = await trigger({ payload: 1, options: { idempotencyKey: cjk(682) + "ab" } }, api.devAuth, encodeURIComponent(cjk(128)));
    expect(largest.statusCode).toBe(200);
  });
});
