// Durations and cursors whose numbers are too big for a date: a 400 naming the field, never a
// delay silently dropped or an invalid date sent to Postgres.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";
import { createTokenRequest } from "./waitpoints-helpers.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const HUGE = "99999999999999999999d";
const trigger = (options: unknown) => api.app.inject({ method: "POST", url: "/api/v1/tasks/t/trigger", headers: api.devAuth, payload: { payload: 1, options } as object });
const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("durations too long for any date", () => {
  it("are refused on trigger, naming the option", async () => {
    for (const [field, options] of [
      ["delay", { delay: HUGE }],
      ["ttl", { ttl: HUGE }],
      ["ttl", { ttl: Number.MAX_SAFE_INTEGER }],
      ["idempotencyKeyTTL", { idempotencyKey: "k", idempotencyKeyTTL: HUGE }],
    ] as const) {
      const res = await trigger(options);
      expect(res.statusCode, JSON.stringify(options)).toBe(400);
      expect(res.json().error).toMatch(new RegExp(`^${field}: .*too long`));
    }
    const { rows } = await api.db.pool.query(`SELECT count(*)::int AS n FROM runs`);
    expect(rows[0].n).toBe(0);
  });

  it("are refused on token create", async () => {
    for (const body of [{ timeout: HUGE }, { idempotencyKey: "k", idempotencyKeyTTL: HUGE }]) {
      const res = await createTokenRequest(api, body);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatch(/too long/);
    }
  });

  it("as a run list period mean every run", async () => {
    const created = (await trigger({})).json();
    const res = await api.app.inject({ method: "GET", url: `/api/v1/runs?filter[createdAt][period]=${HUGE}`, headers: api.devAuth });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.map((r: { id: string }) => r.id)).toEqual([created.id]);
  });
});

describe("dates JS holds but Postgres cannot", () => {
  it("are refused naming the field (or held at the latest date), never sent to Postgres as an invalid or out-of-range date", async () => {
    const before = (await api.db.pool.query(`SELECT count(*)::int AS n FROM runs`)).rows[0].n;
    // The latest JS date plus a TTL is no date at all (was sent as "0NaN-NaN-…"): the run expires
    // at the latest date instead, a real one (a TTL only ever shortens a run's life).
    const pastLatest = await trigger({ delay: 8.64e15, ttl: "1s" });
    expect(pastLatest.statusCode).toBe(200);
    const { rows } = await api.db.pool.query(`SELECT expire_at, delay_until FROM runs WHERE id = $1`, [pastLatest.json().id]);
    expect(rows[0]).toEqual({ expire_at: new Date(8.64e15), delay_until: new Date(8.64e15) });
    expect((await api.db.pool.query(`SELECT count(*)::int AS n FROM runs`)).rows[0].n).toBe(before + 1);
    // Epoch milliseconds before 4714 BC: a valid JS date Postgres refuses.
    const earliest = await createTokenRequest(api, { timeout: -8.64e15 });
    expect(earliest.statusCode).toBe(400);
    expect(earliest.json().error).toMatch(/^timeout: the resulting date is outside the range/);
    for (const url of ["/api/v1/runs?filter[createdAt][from]=-271821-04-20T00:00:00Z", "/api/v1/waitpoints/tokens?filter[createdAt][to]=-271821-04-20T00:00:00Z"]) {
      const res = await api.app.inject({ method: "GET", url, headers: api.devAuth });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error, url).toMatch(/^filter\[createdAt\]\[(from|to)\]: /);
    }
  });

  it("maxDuration beyond a Postgres integer is a 400 naming the option", async () => {
    const res = await trigger({ maxDuration: 2 ** 31 });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/^Invalid request body: options\.maxDuration: Too big/);
  });
});

describe("dates that are not on the calendar", () => {
  it("are refused naming the field instead of rolling over into the next month", async () => {
    const before = (await api.db.pool.query(`SELECT count(*)::int AS n FROM runs`)).rows[0].n;
    for (const delay of ["2031-02-30T00:00:00Z", "2031-04-31", "2031-13-01T00:00:00Z", "2031-02-29"]) {
      const res = await trigger({ delay });
      expect(res.statusCode, delay).toBe(400);
      expect(res.json().error, delay).toMatch(/^delay: .* is not a date on the calendar/);
    }
    expect((await api.db.pool.query(`SELECT count(*)::int AS n FROM runs`)).rows[0].n).toBe(before);
    expect((await trigger({ delay: "2032-02-29T00:00:00Z" })).statusCode).toBe(200); // a leap day
    const token = await createTokenRequest(api, { timeout: "2031-06-31T00:00:00Z" });
    expect(token.statusCode).toBe(400);
    expect(token.json().error).toMatch(/^timeout: /);
    for (const url of ["/api/v1/runs?filter[createdAt][from]=2024-02-30", "/api/v1/waitpoints/tokens?filter[createdAt][to]=2024-02-30T00:00:00Z"]) {
      const res = await api.app.inject({ method: "GET", url, headers: api.devAuth });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error, url).toMatch(/^filter\[createdAt\]\[(from|to)\]: /);
    }
    expect((await api.app.inject({ method: "GET", url: "/api/v1/runs?filter[createdAt][from]=2024-02-29", headers: api.devAuth })).statusCode).toBe(200);
  });
});

describe("page cursors with values Postgres cannot take", () => {
  it("are refused like any cursor this API did not return", async () => {
    for (const value of [{ c: 1e20, r: "x" }, { c: 1, r: "a\u0000b" }, { c: -8.64e15, r: "x" }]) {
      const res = await api.app.inject({ method: "GET", url: `/api/v1/waitpoints/tokens?page[after]=${cursor(value)}`, headers: api.devAuth });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe("page[after]: not a cursor returned by this API");
    }
  });
});
