import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fireAllDue } from "@svc/runtime/engine";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { completeRequest, createTokenOk, createTokenRequest, tokenRow } from "./waitpoints-helpers.ts";

const START = new Date("2026-03-01T12:00:00.000Z");
let api: TestApi;
let clock: FakeClock;
beforeAll(async () => {
  clock = new FakeClock(START);
  api = await startTestApi({ clock });
});
afterAll(async () => api?.close());

describe("POST /api/v1/waitpoints/tokens", () => {
  it("creates a WAITING token that times out after 10 minutes by default", async () => {
    const res = await createTokenRequest(api, {});
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.id).toMatch(/^waitpoint_[a-z0-9]+$/);
    expect(body.isCached).toBe(false);
    expect(body.url).toMatch(new RegExp(`^http://svc\\.test/api/v1/waitpoints/tokens/${body.id}/callback/[0-9a-f]{64}$`));
    const row = await tokenRow(api, body.id);
    expect(row).toMatchObject({ type: "MANUAL", status: "WAITING", environment_id: api.project.environments.dev.id, idempotency_key: null, tags: [] });
    expect(row.created_at.getTime()).toBe(clock.now().getTime());
    expect(row.timeout_at.getTime() - row.created_at.getTime()).toBe(10 * 60_000);
  });

  it("returns a 24-hour public access token scoped to the token, in the body and the x-trigger-jwt header", async () => {
    const res = await createTokenRequest(api, {});
    const body = res.json();
    expect(body.publicAccessToken).toBe(res.headers["x-trigger-jwt"]);
    expect(JSON.parse(String(res.headers["x-trigger-jwt-claims"]))).toEqual({ sub: api.project.environments.dev.id, pub: true });
    const claims = decodeJwt(body.publicAccessToken);
    expect(claims).toMatchObject({ sub: api.project.environments.dev.id, pub: true, scopes: [`write:waitpoints:${body.id}`] });
    expect(claims.exp! - claims.iat!).toBe(24 * 3600);
  });

  it("keeps an idempotency key for one hour by default", async () => {
    const body = await createTokenOk(api, { idempotencyKey: "default-ttl" });
    const row = await tokenRow(api, body.id);
    expect(row.idempotency_key).toBe("default-ttl");
    expect(row.idempotency_key_user_provided).toBe(true);
    expect(row.idempotency_key_expires_at.getTime() - row.created_at.getTime()).toBe(3_600_000);
  });

  it("accepts a duration, an ISO date (past ones too) or epoch milliseconds as timeout", async () => {
    const duration = await createTokenOk(api, { timeout: "1h30m" });
    expect((await tokenRow(api, duration.id)).timeout_at.getTime()).toBe(START.getTime() + 90 * 60_000);
    const past = await createTokenOk(api, { timeout: "2020-01-01T00:00:00.000Z" });
    expect((await tokenRow(api, past.id)).timeout_at.toISOString()).toBe("2020-01-01T00:00:00.000Z");
    const epoch = await createTokenOk(api, { timeout: START.getTime() + 5000 });
    expect((await tokenRow(api, epoch.id)).timeout_at.getTime()).toBe(START.getTime() + 5000);
  });

  it("returns the same token for the same key, per environment", async () => {
    const first = await createTokenOk(api, { idempotencyKey: "same-key", tags: ["a"] });
    const second = await createTokenOk(api, { idempotencyKey: "same-key", tags: ["b"] });
    expect(second.id).toBe(first.id);
    expect(second.isCached).toBe(true);
    expect(second.url).toBe(first.url);
    const prod = await createTokenRequest(api, { idempotencyKey: "same-key" }, { authorization: `Bearer ${api.project.environments.prod.secretKey}` });
    expect(prod.json().id).not.toBe(first.id);
    expect(prod.json().isCached).toBe(false);
  });

  it("returns the cached token even when it is already COMPLETED or TIMED_OUT", async () => {
    const done = await createTokenOk(api, { idempotencyKey: "done-key" });
    expect((await completeRequest(api, done.id, { data: 1 })).statusCode).toBe(200);
    expect(await createTokenOk(api, { idempotencyKey: "done-key" })).toMatchObject({ id: done.id, isCached: true });

    const late = await createTokenOk(api, { idempotencyKey: "late-key", idempotencyKeyTTL: "1d", timeout: "2020-01-01T00:00:00Z" });
    await fireAllDue(api.engine, clock.now());
    expect((await tokenRow(api, late.id)).status).toBe("TIMED_OUT");
    expect(await createTokenOk(api, { idempotencyKey: "late-key" })).toMatchObject({ id: late.id, isCached: true });
  });

  it("creates a new token once the key's TTL passed and keeps the old key as inactive", async () => {
    const first = await createTokenOk(api, { idempotencyKey: "ttl-key", idempotencyKeyTTL: "1m" });
    clock.advance(30_000);
    expect((await createTokenOk(api, { idempotencyKey: "ttl-key" })).id).toBe(first.id);
    clock.advance(31_000);
    const second = await createTokenOk(api, { idempotencyKey: "ttl-key", idempotencyKeyTTL: "1m" });
    expect(second.id).not.toBe(first.id);
    expect(second.isCached).toBe(false);
    const old = await tokenRow(api, first.id);
    expect(old).toMatchObject({ idempotency_key: null, inactive_idempotency_key: "ttl-key" });
    expect(await createTokenOk(api, { idempotencyKey: "ttl-key" })).toMatchObject({ id: second.id, isCached: true });
  });

  it("creates exactly one token when 100 creates race with one key", async () => {
    const responses = await Promise.all(Array.from({ length: 100 }, () => createTokenRequest(api, { idempotencyKey: "race-key" })));
    expect(responses.map((r) => r.statusCode)).toEqual(Array(100).fill(200));
    const ids = new Set(responses.map((r) => r.json().id));
    expect(ids.size).toBe(1);
    expect(responses.filter((r) => r.json().isCached === false)).toHaveLength(1);
    const { rows } = await api.db.pool.query(
      `SELECT count(*)::int AS n FROM waitpoints WHERE idempotency_key = 'race-key' OR inactive_idempotency_key = 'race-key'`,
    );
    expect(rows[0].n).toBe(1);
  });

  it("stores tags trimmed and de-duplicated, a single string as one tag", async () => {
    const one = await createTokenOk(api, { tags: "solo" });
    expect((await tokenRow(api, one.id)).tags).toEqual(["solo"]);
    const many = await createTokenOk(api, { tags: [" user:1 ", "user:1", "org:2", ""] });
    expect((await tokenRow(api, many.id)).tags).toEqual(["user:1", "org:2"]);
  });

  it("refuses more than 10 tags with 422 and a tag over 128 characters with 400", async () => {
    const tooMany = await createTokenRequest(api, { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) });
    expect(tooMany.statusCode).toBe(422);
    expect(tooMany.json()).toEqual({ error: "Waitpoints can only have 10 tags, you're trying to set 11." });
    const tooLong = await createTokenRequest(api, { tags: ["x".repeat(129)] });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.json().error).toMatch(/128 characters/);
    expect((await createTokenRequest(api, { tags: ["x".repeat(128)] })).statusCode).toBe(200);
  });

  it("answers malformed durations and dates with 400 naming the field", async () => {
    const cases: [unknown, RegExp][] = [
      [{ timeout: "soonish" }, /timeout: "soonish" is neither a duration/],
      [{ timeout: "2026-13-45T99:00:00Z" }, /timeout/],
      [{ timeout: "" }, /timeout/],
      [{ idempotencyKey: "k", idempotencyKeyTTL: "forever" }, /idempotencyKeyTTL: "forever" is not a duration/],
      [{ timeout: { at: 1 } }, /timeout/],
      [{ idempotencyKey: "" }, /idempotencyKey/],
      [{ idempotencyKey: "k".repeat(2049) }, /2048/],
      // 6 kB of UTF-8: past the btree entry limit of the key's unique index (was a 500).
      [{ idempotencyKey: Array.from({ length: 2048 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join("") }, /idempotencyKey: must be 2048 bytes or less in UTF-8/],
      // Half a surrogate pair was stored as U+FFFD.
      [{ idempotencyKey: "key-\ud83d" }, /idempotencyKey: must be valid Unicode/],
      [{ tags: ["user-\ud83d"] }, /tags/],
      [{ tags: "a\u0000b" }, /tags/],
      [{ tags: 5 }, /tags/],
      [[1, 2], /Request body must be a JSON object, got an array/],
    ];
    for (const [body, message] of cases) {
      const res = await createTokenRequest(api, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toMatch(message);
    }
  });

  it("answers a missing or non-JSON body with 400 and a missing or wrong credential with 401", async () => {
    const empty = await api.app.inject({ method: "POST", url: "/api/v1/waitpoints/tokens", headers: { ...api.devAuth, "content-type": "application/json" } });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toBe("Request body is empty");
    const notJson = await api.app.inject({
      method: "POST",
      url: "/api/v1/waitpoints/tokens",
      headers: { ...api.devAuth, "content-type": "application/json" },
      payload: "{nope",
    });
    expect(notJson.statusCode).toBe(400);
    expect((await createTokenRequest(api, {}, {})).statusCode).toBe(401);
    expect((await createTokenRequest(api, {}, { authorization: "Bearer svc_dev_unknown" })).statusCode).toBe(401);
    const jwt = (await createTokenOk(api)).publicAccessToken;
    expect((await createTokenRequest(api, {}, { authorization: `Bearer ${jwt}` })).statusCode).toBe(401);
  });

  it("answers a body sent with a non-JSON Content-Type with 415 rather than ignoring its options", async () => {
    for (const contentType of ["application/x-www-form-urlencoded", "application/octet-stream"]) {
      for (const payload of ['{"timeout":"1h"}', ""]) {
        const res = await api.app.inject({ method: "POST", url: "/api/v1/waitpoints/tokens", headers: { ...api.devAuth, "content-type": contentType }, payload });
        expect(res.statusCode, `${contentType} ${payload}`).toBe(415);
        expect(res.json().error).toBe(`Content-Type must be application/json (got ${contentType})`);
      }
    }
  });
});
