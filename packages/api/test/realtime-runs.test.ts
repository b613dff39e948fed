// The realtime run routes on the wire (ElectricSQL's shape protocol), over a real port: snapshots,
// offsets and handles, live long polls woken by changes made by any statement, catching up after a
// gap from the table, another API process answering an offset, credentials and bad input.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { startListeningApi, type ListeningApi } from "./client-server.ts";
import { startTestApiOn } from "./harness.ts";
import { registerTasks } from "./registered-tasks.ts";
import { triggerTask } from "./runs-fixtures.ts";

const LIVE_POLL_MS = 1500;
let api: ListeningApi;

beforeAll(async () => {
  api = await startListeningApi({ limits: { realtimeLivePollMs: LIVE_POLL_MS, runSubscriptions: { perPublicToken: 2, perAddress: null } } });
  // Registered, as a worker would: its queued runs read PENDING (QUEUED); a never-registered task's read PENDING_VERSION.
  await registerTasks(api.db.pool, api.project.environments.dev.id, ["hello-world"]);
});
afterAll(async () => api?.close());

interface ShapeAnswer {
  status: number;
  headers: Headers;
  body: any;
  offset: string;
  handle: string;
  /** The change messages' rows (the body without its control messages). */
  rows: Record<string, string | null>[];
  operations: string[];
}

const ELECTRIC = { "x-trigger-electric-version": "1.0.0-beta.1", "x-trigger-api-version": "2025-07-16" };

async function shape(path: string, params: Record<string, string> = {}, headers: Record<string, string> = api.devAuth): Promise<ShapeAnswer> {
  const url = new URL(path, api.baseURL);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const res = await fetch(url, { headers: { ...ELECTRIC, ...headers } });
  const body = await res.json();
  const changes = Array.isArray(body) ? body.filter((m: any) => "key" in m) : [];
  return {
    status: res.status,
    headers: res.headers,
    body,
    offset: res.headers.get("electric-offset") ?? "",
    handle: res.headers.get("electric-handle") ?? "",
    rows: changes.map((m: any) => m.value),
    operations: changes.map((m: any) => m.headers.operation),
  };
}

/** Waits until `n` live requests are registered with the process's hub (so a change now wakes them). */
async function waiting(n: number) {
  await expect.poll(() => api.deps.runChanges!.size, { timeout: 5000, interval: 10 }).toBe(n);
}

/** A public token of the dev environment with `scopes` (and more claims, as the SDK may sign). */
async function token(scopes: string[], claims: Record<string, unknown> = {}): Promise<{ authorization: string }> {
  const jwt = Object.keys(claims).length > 0 ? await signWithClaims(scopes, claims) : await mintPublicToken(api.deps, api.env, scopes);
  return { authorization: `Bearer ${jwt}` };
}

async function signWithClaims(scopes: string[], claims: Record<string, unknown>): Promise<string> {
  const { SignJWT } = await import("jose");
  const { environmentSigningKey, JWT_AUDIENCE, JWT_ISSUER } = await import("@svc/runtime/engine");
  const key = await environmentSigningKey(api.engine, api.env);
  return new SignJWT({ pub: true, sub: api.env.id, scopes, ...claims })
    .setProtectedHeader({ alg: "HS256" })
    .setIssuer(JWT_ISSUER)
    .setAudience(JWT_AUDIENCE)
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(key));
}

async function cancel(runId: string) {
  const res = await api.app.inject({ method: "POST", url: `/api/v2/runs/${runId}/cancel`, headers: api.devAuth });
  expect(res.statusCode).toBe(200);
}

describe("GET /realtime/v1/runs/{id}", () => {
  it("answers the run as one insert and up-to-date, with the headers @electric-sql/client requires", async () => {
    const runId = await triggerTask(api, { payload: { n: 1 }, options: { tags: ["b", "a"], metadata: { progress: 0.5 }, idempotencyKey: "rt-idem" } });
    const first = await shape(`/realtime/v1/runs/${runId}`, { offset: "-1", log: "full" });
    expect(first.status).toBe(200);
    expect(first.handle).toBe(`run-${runId}`);
    expect(first.offset).toMatch(/^[0-9]+_[0-9]+/);
    expect(first.headers.get("electric-up-to-date")).not.toBeNull();
    expect(first.headers.get("electric-cursor")).not.toBeNull();
    expect(first.headers.get("electric-chunk-last-offset")).toBeNull();
    expect(JSON.parse(first.headers.get("electric-schema")!)).toMatchObject({ runTags: { type: "text", dims: 1 }, isTest: { type: "bool" }, error: { type: "jsonb" } });
    expect(first.body.at(-1)).toEqual({ headers: { control: "up-to-date" } });
    expect(first.operations).toEqual(["insert"]);
    expect(first.rows[0]).toMatchObject({
      id: runId,
      friendlyId: runId,
      taskIdentifier: "hello-world",
      status: "PENDING",
      runTags: '{"a","b"}',
      metadata: '{"progress":0.5}',
      metadataType: "application/json",
      idempotencyKey: "rt-idem",
      isTest: "f",
      number: "0",
      output: null,
      completedAt: null,
    });
    expect(JSON.parse(first.rows[0]!.payload!)).toEqual({ n: 1 });
    expect(first.rows[0]!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/);
  });

  it("holds a live request until the run changes, whoever changed it, then answers the whole new row", async () => {
    const runId = await triggerTask(api, { payload: { n: 2 } });
    const first = await shape(`/realtime/v1/runs/${runId}`);
    const live = shape(`/realtime/v1/runs/${runId}`, { offset: first.offset, handle: first.handle, live: "true", cursor: first.headers.get("electric-cursor")! });
    await waiting(1);
    // Not through the engine: any statement that changes the row wakes its subscribers.
    await api.db.pool.query(`UPDATE runs SET metadata = '{"step":"two"}' WHERE id = $1`, [runId]);
    const changed = await live;
    expect(changed.status).toBe(200);
    expect(changed.operations).toEqual(["update"]);
    expect(changed.rows[0]).toMatchObject({ id: runId, status: "PENDING", metadata: '{"step":"two"}' });
    expect(changed.offset).not.toBe(first.offset);
    await waiting(0);

    // Nothing more changes: the long poll ends up to date, with no row.
    const idle = await shape(`/realtime/v1/runs/${runId}`, { offset: changed.offset, handle: changed.handle, live: "true" });
    expect(idle.status).toBe(200);
    expect(idle.body).toEqual([{ headers: { control: "up-to-date" } }]);
  });

  it("catches up from an old offset with what changed while the client was away, from the table", async () => {
    const runId = await triggerTask(api, { payload: { n: 3 } });
    const first = await shape(`/realtime/v1/runs/${runId}`);
    await api.db.pool.query(`UPDATE runs SET metadata = '{"seen":false}' WHERE id = $1`, [runId]);
    await cancel(runId);
    const caughtUp = await shape(`/realtime/v1/runs/${runId}`, { offset: first.offset, handle: first.handle });
    expect(caughtUp.rows).toHaveLength(1);
    expect(caughtUp.rows[0]).toMatchObject({ status: "CANCELED", metadata: '{"seen":false}' });
    expect(caughtUp.rows[0]!.completedAt).not.toBeNull();
    // Live from the same old offset: answered at once, no waiting.
    const live = await shape(`/realtime/v1/runs/${runId}`, { offset: first.offset, handle: first.handle, live: "true" });
    expect(live.rows[0]).toMatchObject({ status: "CANCELED" });
    // And from the new one there is nothing left to tell.
    const none = await shape(`/realtime/v1/runs/${runId}`, { offset: caughtUp.offset, handle: caughtUp.handle });
    expect(none.rows).toEqual([]);
  });

  it("answers another API process's offset exactly (offsets are snapshots, not per-process state)", async () => {
    const other = await startTestApiOn(api);
    try {
      const runId = await triggerTask(api, { payload: { n: 4 } });
      const first = await shape(`/realtime/v1/runs/${runId}`);
      await cancel(runId);
      const url = `/realtime/v1/runs/${runId}?offset=${first.offset}&handle=${first.handle}`;
      const res = await other.app.inject({ method: "GET", url, headers: { ...ELECTRIC, ...api.devAuth } });
      expect(res.statusCode).toBe(200);
      expect(res.json()[0].value).toMatchObject({ id: runId, status: "CANCELED" });
    } finally {
      await other.close();
    }
  });

  it("tells a client with another shape's handle or an offset from the future to start over (409 must-refetch)", async () => {
    const runId = await triggerTask(api, { payload: { n: 5 } });
    const first = await shape(`/realtime/v1/runs/${runId}`);
    const wrong = await shape(`/realtime/v1/runs/${runId}`, { offset: first.offset, handle: "run-someone-else" });
    expect(wrong.status).toBe(409);
    expect(wrong.body).toEqual([{ headers: { control: "must-refetch" } }]);
    expect(wrong.handle).toBe(`run-${runId}`);
    const [xmin, xmax] = first.offset.split("_").slice(0, 2).map(BigInt);
    const future = await shape(`/realtime/v1/runs/${runId}`, { offset: `${xmin! + 10n ** 9n}_${xmax! + 10n ** 9n}`, handle: first.handle });
    expect(future.status).toBe(409);
  });

  it("leaves out skipped columns, from the query and from the token's realtime claim, but never the ones the SDK needs", async () => {
    const runId = await triggerTask(api, { payload: { big: "x".repeat(100) } });
    const skipped = await shape(`/realtime/v1/runs/${runId}`, { skipColumns: "payload,status,output" });
    expect(skipped.rows[0]).not.toHaveProperty("payload");
    expect(skipped.rows[0]).not.toHaveProperty("output");
    expect(skipped.rows[0]).toHaveProperty("status", "PENDING");
    expect(JSON.parse(skipped.headers.get("electric-schema")!)).not.toHaveProperty("payload");
    const viaClaim = await shape(`/realtime/v1/runs/${runId}`, {}, await token([`read:runs:${runId}`], { realtime: { skipColumns: ["payload"] } }));
    expect(viaClaim.status).toBe(200);
    expect(viaClaim.rows[0]).not.toHaveProperty("payload");
  });

  it("serves clients before @electric-sql/client 1.0 their header names and shows them DEQUEUED as EXECUTING", async () => {
    const runId = await triggerTask(api, { payload: {} });
    await api.db.pool.query(`UPDATE runs SET status = 'DEQUEUED' WHERE id = $1`, [runId]);
    const res = await fetch(`${api.baseURL}/realtime/v1/runs/${runId}?offset=-1`, { headers: api.devAuth });
    expect(res.headers.get("electric-chunk-last-offset")).toBe(res.headers.get("electric-offset"));
    expect(res.headers.get("electric-shape-id")).toBe(`run-${runId}`);
    expect(((await res.json()) as any)[0].value.status).toBe("EXECUTING");
    expect((await shape(`/realtime/v1/runs/${runId}`)).rows[0]!.status).toBe("DEQUEUED");
  });

  it("maps errors to Trigger.dev's TaskRunError and every status to a name the SDK maps back", async () => {
    const runId = await triggerTask(api, { payload: {} });
    await api.db.pool.query(`UPDATE runs SET status = 'FAILED', finished_at = now(), error = '{"type":"user","name":"TypeError","message":"boom","stack":"at x"}' WHERE id = $1`, [runId]);
    const row = (await shape(`/realtime/v1/runs/${runId}`)).rows[0]!;
    expect(row.status).toBe("COMPLETED_WITH_ERRORS");
    expect(JSON.parse(row.error!)).toEqual({ type: "BUILT_IN_ERROR", name: "TypeError", message: "boom", stackTrace: "at x" });
  });
});

describe("credentials and bad input", () => {
  it("refuses a missing or forged credential with 401, a token without a fitting scope with 403, as JSON", async () => {
    const runId = await triggerTask(api, { payload: {}, options: { tags: ["cred-tag"] } });
    const none = await shape(`/realtime/v1/runs/${runId}`, {}, {});
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: expect.any(String) });
    const forged = await shape(`/realtime/v1/runs/${runId}`, {}, { authorization: "Bearer a.b.c" });
    expect(forged.status).toBe(401);
    const other = await shape(`/realtime/v1/runs/${runId}`, {}, await token(["read:runs:run_other"]));
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({ error: "Unauthorized" });
    // Any scope that reads the run: the run, its tag, its task, every run.
    for (const scope of [`read:runs:${runId}`, "read:tags:cred-tag", "read:tasks:hello-world", "read:runs", "read:all"]) {
      expect((await shape(`/realtime/v1/runs/${runId}`, {}, await token([scope]))).status, scope).toBe(200);
    }
    expect((await shape(`/realtime/v1/runs`, { tags: "cred-tag" }, await token(["read:tags:other"]))).status).toBe(403);
    expect((await shape(`/realtime/v1/runs`, { tags: "cred-tag" }, await token(["read:tags:cred-tag"]))).status).toBe(200);
    expect((await shape(`/realtime/v1/runs`, {}, await token(["read:tags:cred-tag"]))).status).toBe(403);
    expect((await shape(`/realtime/v1/batches/batch_nope`, {}, await token(["read:batch:batch_nope"]))).status).toBe(404);
  });

  it("answers 404 for an unknown run and 400 for a malformed offset, tag list or createdAt", async () => {
    expect((await shape(`/realtime/v1/runs/run_doesnotexist`)).status).toBe(404);
    const runId = await triggerTask(api, { payload: {} });
    for (const offset of ["abc", "1_2_", "-2", "1_2_3,4"]) {
      const bad = await shape(`/realtime/v1/runs/${runId}`, { offset, handle: `run-${runId}` });
      expect(bad.status, offset).toBe(400);
      expect(bad.body.error).toMatch(/offset/);
    }
    // Of an offset's form, but no snapshot: the client is told to start over.
    for (const offset of ["0_0", "5_3", "3_9_2", "3_9_4.4"]) {
      const bad = await shape(`/realtime/v1/runs/${runId}`, { offset, handle: `run-${runId}` });
      expect(bad.status, offset).toBe(409);
      expect(bad.body).toEqual([{ headers: { control: "must-refetch" } }]);
    }
    expect((await shape(`/realtime/v1/runs`, { tags: "a,,b" })).status).toBe(400);
    expect((await shape(`/realtime/v1/runs`, { tags: Array.from({ length: 11 }, (_, i) => `t${i}`).join(",") })).status).toBe(400);
    const badCreatedAt = await shape(`/realtime/v1/runs`, { tags: "a", createdAt: "yesterday" });
    expect(badCreatedAt.status).toBe(400);
    expect(badCreatedAt.body.error).toMatch(/createdAt/);
    expect((await shape(`/realtime/v1/runs/${runId}`, { skipColumns: "pay load" })).status).toBe(400);
  });

  it("bounds the live requests a public token holds open (429 with Retry-After), and frees them when they end", async () => {
    const runId = await triggerTask(api, { payload: {} });
    const auth = await token([`read:runs:${runId}`]);
    const first = await shape(`/realtime/v1/runs/${runId}`, {}, auth);
    const params = { offset: first.offset, handle: first.handle, live: "true" };
    const held = [shape(`/realtime/v1/runs/${runId}`, params, auth), shape(`/realtime/v1/runs/${runId}`, params, auth)];
    await waiting(2);
    const refused = await shape(`/realtime/v1/runs/${runId}`, params, auth);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(refused.body.error).toMatch(/at most 2/);
    await cancel(runId);
    for (const answer of await Promise.all(held)) expect(answer.rows[0]).toMatchObject({ status: "CANCELED" });
    expect((await shape(`/realtime/v1/runs/${runId}`, params, auth)).status).toBe(200);
  });
});

describe("GET /realtime/v1/runs?tags= and /realtime/v1/batches/{id}", () => {
  it("follows the runs carrying every tag: a new one arrives on a live request", async () => {
    const a = await triggerTask(api, { payload: { i: 1 }, options: { tags: ["user:1", "kind:x"] } });
    await triggerTask(api, { payload: { i: 2 }, options: { tags: ["user:1"] } });
    const first = await shape(`/realtime/v1/runs`, { tags: "user:1,kind:x", createdAt: "1h" });
    expect(first.rows.map((r) => r.id)).toEqual([a]);
    expect(first.handle).toMatch(/^tags-[0-9]+$/);
    const live = shape(`/realtime/v1/runs`, { tags: "user:1,kind:x", createdAt: "1h", offset: first.offset, handle: first.handle, live: "true" });
    await waiting(1);
    // A run of the other user does not wake it; one carrying both tags does.
    await triggerTask(api, { payload: { i: 3 }, options: { tags: ["user:2", "kind:x"] } });
    const b = await triggerTask(api, { payload: { i: 4 }, options: { tags: ["kind:x", "user:1", "more"] } });
    const next = await live;
    expect(next.rows.map((r) => r.id)).toEqual([b]);
  });

  it("follows a batch's runs", async () => {
    const res = await api.app.inject({ method: "POST", url: "/api/v2/tasks/batch", headers: api.devAuth, payload: { items: [{ task: "hello-world", payload: { i: 0 } }, { task: "hello-world", payload: { i: 1 } }] } });
    expect(res.statusCode).toBe(202);
    const { id: batchId, runs } = res.json();
    const batchToken = { authorization: `Bearer ${res.headers["x-trigger-jwt"]}` };
    const first = await shape(`/realtime/v1/batches/${batchId}`, {}, batchToken);
    expect(first.status).toBe(200);
    expect(first.rows.map((r) => r.id)).toEqual(runs);
    const live = shape(`/realtime/v1/batches/${batchId}`, { offset: first.offset, handle: first.handle, live: "true" }, batchToken);
    await waiting(1);
    await cancel(runs[1]);
    const next = await live;
    expect(next.rows.map((r) => [r.id, r.status])).toEqual([[runs[1], "CANCELED"]]);
  });

  it("registers the environment's watch while subscribed, so run changes there NOTIFY", async () => {
    const { rows } = await api.db.pool.query(`SELECT environment_id FROM realtime_watches`);
    expect(rows.map((r) => r.environment_id)).toContain(api.env.id);
    expect(api.deps.runChanges!.watches.environments).toContain(api.env.id);
  });
});
