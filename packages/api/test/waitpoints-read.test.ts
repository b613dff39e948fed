import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fireAllDue } from "@svc/runtime/engine";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { completeRequest, createTokenOk, createTokenRequest, tokenRow } from "./waitpoints-helpers.ts";

const START = new Date("2026-05-01T08:00:00.000Z");
let api: TestApi;
let clock: FakeClock;
beforeAll(async () => {
  clock = new FakeClock(START);
  api = await startTestApi({ clock });
});
afterAll(async () => api?.close());

function retrieve(id: string, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "GET", url: `/api/v1/waitpoints/tokens/${id}`, headers });
}

describe("GET /api/v1/waitpoints/tokens/{id}", () => {
  it("returns a waiting token without output, completion or key fields", async () => {
    const token = await createTokenOk(api, { tags: ["zeta", "alpha"] });
    const res = await retrieve(token.id);
    expect(res.statusCode).toBe(200);
    const now = clock.now();
    expect(res.json()).toEqual({
      id: token.id,
      url: token.url,
      status: "WAITING",
      timeoutAt: new Date(now.getTime() + 600_000).toISOString(),
      tags: ["alpha", "zeta"],
      createdAt: now.toISOString(),
      outputIsError: false,
    });
  });

  it("shows the idempotency key only when the creator gave one", async () => {
    const token = await createTokenOk(api, { idempotencyKey: "retrieve-key", idempotencyKeyTTL: "2h" });
    const body = (await retrieve(token.id)).json();
    expect(body.idempotencyKey).toBe("retrieve-key");
    expect(body.idempotencyKeyExpiresAt).toBe(new Date(clock.now().getTime() + 2 * 3_600_000).toISOString());
  });

  it("returns a completed token's output as a serialized JSON string", async () => {
    const token = await createTokenOk(api);
    await completeRequest(api, token.id, { data: { approved: true } });
    const body = (await retrieve(token.id)).json();
    expect(body).toMatchObject({ status: "COMPLETED", output: '{"approved":true}', outputType: "application/json", outputIsError: false, completedAt: clock.now().toISOString() });
  });

  it("times a token out when the clock passes its timeout, with an error output the SDK understands", async () => {
    const token = await createTokenOk(api, { timeout: "5m" });
    const timeoutAt = new Date(clock.now().getTime() + 300_000);
    clock.advance(299_999);
    await fireAllDue(api.engine, clock.now());
    expect((await tokenRow(api, token.id)).status).toBe("WAITING");
    clock.advance(1);
    await fireAllDue(api.engine, clock.now());
    const body = (await retrieve(token.id)).json();
    expect(body).toMatchObject({ status: "TIMED_OUT", outputIsError: true, outputType: "application/json", completedAt: clock.now().toISOString() });
    expect(JSON.parse(body.output)).toMatchObject({ message: `Waitpoint timed out at ${timeoutAt.toISOString()}`, code: expect.any(String), name: expect.any(String) });
    // A completion after the timeout changes nothing.
    expect((await completeRequest(api, token.id, { data: "late" })).json()).toEqual({ success: true });
    expect((await retrieve(token.id)).json().status).toBe("TIMED_OUT");
  });

  it("answers 404 for unknown, other-environment and non-token waitpoints", async () => {
    const unknown = await retrieve("waitpoint_unknown");
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: "Waitpoint not found" });
    const token = await createTokenOk(api);
    expect((await retrieve(token.id, { authorization: `Bearer ${api.project.environments.prod.secretKey}` })).statusCode).toBe(404);
    await api.db.pool.query(
      `INSERT INTO waitpoints (id, environment_id, type, status, timeout_at) VALUES ('waitpoint_datetime1', $1, 'DATETIME', 'WAITING', $2)`,
      [api.project.environments.dev.id, new Date(START.getTime() + 86_400_000)],
    );
    expect((await retrieve("waitpoint_datetime1")).statusCode).toBe(404);
  });

  it("answers a malformed id with 400 and other credentials with 401", async () => {
    expect((await retrieve("not-a-waitpoint")).statusCode).toBe(400);
    const token = await createTokenOk(api);
    expect((await retrieve(token.id, {})).statusCode).toBe(401);
    expect((await retrieve(token.id, { authorization: `Bearer ${token.publicAccessToken}` })).statusCode).toBe(401);
  });
});

describe("GET /api/v1/waitpoints/tokens", () => {
  const prodAuth = () => ({ authorization: `Bearer ${api.project.environments.prod.secretKey}` });
  const list = (query = "", headers: Record<string, string> = prodAuth()) => api.app.inject({ method: "GET", url: `/api/v1/waitpoints/tokens${query ? `?${query}` : ""}`, headers });
  const ids = async (query: string) => {
    const res = await list(query);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data.map((t: { id: string }) => t.id);
  };
  let first: string, second: string, third: string;
  let t0: Date;

  beforeAll(async () => {
    clock.set(new Date("2026-06-01T00:00:00.000Z"));
    t0 = clock.now();
    const create = async (body: object) => (await createTokenRequest(api, body, prodAuth())).json().id as string;
    first = await create({ tags: ["b", "a"] });
    clock.advance(60_000);
    second = await create({ tags: ["b"], idempotencyKey: "list-key", idempotencyKeyTTL: "1h" });
    clock.advance(60_000);
    third = await create({ timeout: "1m" });
    await completeRequest(api, first, { data: { secret: "not in lists" } }, prodAuth());
    clock.advance(120_000);
    await fireAllDue(api.engine, clock.now());
  });

  it("lists only this environment's tokens, newest first, without output", async () => {
    const res = await list();
    const body = res.json();
    expect(body.data.map((t: { id: string }) => t.id)).toEqual([third, second, first]);
    expect(body.pagination).toEqual({});
    const [t3, t2, t1] = body.data;
    expect(t1).toMatchObject({ status: "COMPLETED", tags: ["a", "b"], completedAt: expect.any(String) });
    expect(t1).not.toHaveProperty("output");
    expect(t1).not.toHaveProperty("outputIsError");
    expect(t1).not.toHaveProperty("idempotencyKey");
    expect(t2).toMatchObject({ status: "WAITING", idempotencyKey: "list-key", idempotencyKeyExpiresAt: expect.any(String) });
    expect(t3).toMatchObject({ status: "TIMED_OUT" });
    expect(t3.url).toMatch(/\/callback\/[0-9a-f]{64}$/);
  });

  it("filters by status, tags (any match) and idempotency key", async () => {
    expect(await ids("filter[status]=COMPLETED")).toEqual([first]);
    expect(await ids("filter[status]=WAITING,TIMED_OUT")).toEqual([third, second]);
    expect(await ids("filter[tags]=a")).toEqual([first]);
    expect(await ids("filter[tags]=a,b")).toEqual([second, first]);
    expect(await ids("filter[tags]=nope")).toEqual([]);
    expect(await ids("filter[idempotencyKey]=list-key")).toEqual([second]);
  });

  it("finds tokens by an expired idempotency key too", async () => {
    clock.advance(3_600_000);
    const renewed = (await createTokenRequest(api, { idempotencyKey: "list-key" }, prodAuth())).json();
    expect(renewed.isCached).toBe(false);
    expect(await ids("filter[idempotencyKey]=list-key")).toEqual([renewed.id, second]);
    const old = (await list("filter[idempotencyKey]=list-key")).json().data[1];
    expect(old.idempotencyKey).toBe("list-key");
    await api.db.pool.query(`DELETE FROM waitpoints WHERE id = $1`, [renewed.id]);
  });

  it("filters by creation time: period, from and to (epoch ms or ISO)", async () => {
    clock.set(new Date(t0.getTime() + 30 * 60_000));
    expect(await ids("filter[createdAt][period]=1h")).toEqual([third, second, first]);
    clock.set(new Date(t0.getTime() + 2 * 86_400_000));
    expect(await ids("filter[createdAt][period]=1h")).toEqual([]);
    expect(await ids("filter[createdAt][period]=7d")).toEqual([third, second, first]);
    expect(await ids(`filter[createdAt][from]=${t0.getTime() + 60_000}`)).toEqual([third, second]);
    expect(await ids(`filter[createdAt][to]=${new Date(t0.getTime() + 60_000).toISOString()}`)).toEqual([second, first]);
    expect(await ids(`filter[createdAt][from]=${t0.getTime() + 1}&filter[createdAt][to]=${t0.getTime() + 60_001}`)).toEqual([second]);
  });

  it("pages with cursors in both directions", async () => {
    const page1 = (await list("page[size]=2")).json();
    expect(page1.data.map((t: { id: string }) => t.id)).toEqual([third, second]);
    expect(page1.pagination.next).toEqual(expect.any(String));
    expect(page1.pagination).not.toHaveProperty("previous");
    const page2 = (await list(`page[size]=2&page[after]=${page1.pagination.next}`)).json();
    expect(page2.data.map((t: { id: string }) => t.id)).toEqual([first]);
    expect(page2.pagination).not.toHaveProperty("next");
    const back = (await list(`page[size]=2&page[before]=${page2.pagination.previous}`)).json();
    expect(back.data.map((t: { id: string }) => t.id)).toEqual([third, second]);
  });

  it("returns 25 tokens per page by default and never non-token waitpoints", async () => {
    const stagingAuth = { authorization: `Bearer ${api.project.environments.staging.secretKey}` };
    for (let i = 0; i < 27; i++) expect((await createTokenRequest(api, {}, stagingAuth)).statusCode).toBe(200);
    await api.db.pool.query(`INSERT INTO waitpoints (id, environment_id, type, status) VALUES ('waitpoint_run1', $1, 'RUN', 'WAITING')`, [api.project.environments.staging.id]);
    const page1 = (await list("", stagingAuth)).json();
    expect(page1.data).toHaveLength(25);
    const page2 = (await list(`page[after]=${page1.pagination.next}`, stagingAuth)).json();
    expect(page2.data).toHaveLength(2);
    expect([...page1.data, ...page2.data].map((t: { id: string }) => t.id)).not.toContain("waitpoint_run1");
  });

  it("answers bad filters and page parameters with 400, other credentials with 401", async () => {
    const bad = [
      ["filter[status]=DONE", /filter\[status\]/],
      ["filter[status]=waiting", /filter\[status\]/],
      ["filter[createdAt][period]=24h", /1h, 1d, 7d, 30d/],
      ["filter[createdAt][period]=2w", /period/],
      ["filter[createdAt][from]=yesterday", /filter\[createdAt\]\[from\]/],
      ["filter[createdAt][to]=2026-99-99", /filter\[createdAt\]\[to\]/],
      ["page[size]=0", /page\[size\]/],
      ["page[size]=101", /page\[size\]/],
      ["page[size]=abc", /page\[size\]/],
      ["page[after]=garbage", /page\[after\]/],
      ["page[after]=a&page[before]=b", /together|cursor/],
    ] as const;
    for (const [query, message] of bad) {
      const res = await list(query);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error).toMatch(message);
    }
    expect((await list("", {})).statusCode).toBe(401);
  });
});

describe("OpenAPI document", () => {
  it("describes every waitpoint token route", async () => {
    const doc = (await api.app.inject({ method: "GET", url: "/api/openapi.json" })).json();
    expect(Object.keys(doc.paths["/api/v1/waitpoints/tokens"])).toEqual(expect.arrayContaining(["post", "get"]));
    expect(doc.paths["/api/v1/waitpoints/tokens/{id}"].get).toBeDefined();
    expect(doc.paths["/api/v1/waitpoints/tokens/{id}/complete"].post.requestBody).toBeDefined();
    // The root requires a bearer credential; the callback opts out (its URL is the credential).
    expect(doc.paths["/api/v1/waitpoints/tokens/{id}/callback/{hash}"].post.security).toEqual([]);
  });
});
