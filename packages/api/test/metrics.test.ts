// GET /metrics on the API: counters of what this process did, the database-wide gauges read at
// scrape time, request durations by route template, and the optional bearer token.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { delayedRuns, fireAllDue } from "@svc/runtime/engine";
import { createApiMetrics } from "../src/metrics/api-metrics.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { familyNames, sample } from "./prometheus-text.ts";
import { append, createSessionOk } from "./sessions-helpers.ts";

const TOKEN = "metrics-token-for-tests";
const clock = new FakeClock(new Date("2026-03-01T12:00:00Z"));
let api: TestApi;
let open: TestApi;

beforeAll(async () => {
  api = await startTestApi({ clock, metrics: (te) => createApiMetrics({ pool: te.db.pool, clock, token: TOKEN }) });
  open = await startTestApi({ metrics: (te) => createApiMetrics({ pool: te.db.pool, clock: te.engine.clock, defaultMetrics: false }) });
});
afterAll(async () => {
  await api?.close();
  await open?.close();
});

async function scrape(target = api): Promise<string> {
  const res = await target.app.inject({ method: "GET", url: "/metrics", headers: target === api ? { authorization: `Bearer ${TOKEN}` } : {} });
  expect(res.statusCode).toBe(200);
  expect(res.headers["content-type"]).toContain("text/plain");
  return res.body;
}

async function trigger(taskId: string): Promise<string> {
  const res = await api.app.inject({ method: "POST", url: `/api/v1/tasks/${taskId}/trigger`, headers: api.devAuth, payload: { payload: { n: 1 } } });
  expect(res.statusCode).toBe(200);
  return res.json().id;
}

describe("GET /metrics on the API", () => {
  it("counts triggered runs and cancels, and reads queue depth, queue age and waiting runs from the database", async () => {
    const before = await scrape();
    expect(sample(before, "svc_runs_triggered_total")).toBe(0);
    expect(sample(before, "svc_runs_waiting")).toBe(0);
    expect(sample(before, "svc_queue_depth", { queue: "task/metrics-a" })).toBeUndefined();

    const first = await trigger("metrics-a");
    clock.advance(30_000);
    await trigger("metrics-a");
    await trigger("metrics-b");
    // An idempotent trigger that finds its run creates nothing and is not counted.
    const keyed = { payload: { n: 1 }, options: { idempotencyKey: "metrics-once" } };
    for (let i = 0; i < 2; i++) {
      const res = await api.app.inject({ method: "POST", url: "/api/v1/tasks/metrics-b/trigger", headers: api.devAuth, payload: keyed });
      expect(res.statusCode).toBe(200);
    }
    clock.advance(15_000);

    const after = await scrape();
    expect(sample(after, "svc_runs_triggered_total")).toBe(4);
    expect(sample(after, "svc_queue_depth", { queue: "task/metrics-a" })).toBe(2);
    expect(sample(after, "svc_queue_depth", { queue: "task/metrics-b" })).toBe(2);
    expect(sample(after, "svc_queue_oldest_age_seconds", { queue: "task/metrics-a" })).toBe(45);
    expect(sample(after, "svc_queue_oldest_age_seconds", { queue: "task/metrics-b" })).toBe(15);
    // No worker runs in this test: every queued run is of a task no live worker serves.
    expect(sample(after, "svc_runs_unserved", { task: "metrics-a" })).toBe(2);
    expect(sample(after, "svc_runs_unserved", { task: "metrics-b" })).toBe(2);
    // A live worker with metrics-a (its registry row) serves it: 0 from then on.
    await api.db.pool.query(
      `INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until) VALUES ('worker_metrics', $1, '{metrics-a}', 'v1', 0, $2)`,
      [api.env.id, new Date(clock.now().getTime() + 60_000)],
    );
    const served = await scrape();
    expect(sample(served, "svc_runs_unserved", { task: "metrics-a" })).toBe(0);
    expect(sample(served, "svc_runs_unserved", { task: "metrics-b" })).toBe(2);
    await api.db.pool.query(`DELETE FROM workers WHERE id = 'worker_metrics'`);

    // A cancel is a run this process finished.
    const canceled = await api.app.inject({ method: "POST", url: `/api/v2/runs/${first}/cancel`, headers: api.devAuth });
    expect(canceled.statusCode).toBe(200);
    // Canceling it again changes nothing and counts nothing.
    expect((await api.app.inject({ method: "POST", url: `/api/v2/runs/${first}/cancel`, headers: api.devAuth })).statusCode).toBe(200);
    const later = await scrape();
    expect(sample(later, "svc_runs_finished_total", { status: "CANCELED" })).toBe(1);
    expect(sample(later, "svc_queue_depth", { queue: "task/metrics-a" })).toBe(1);
    expect(sample(later, "svc_queue_oldest_age_seconds", { queue: "task/metrics-a" })).toBe(15);

    // A run waiting on a token (written as a worker's suspension writes it).
    const waiting = await trigger("metrics-c");
    await api.db.pool.query(`UPDATE runs SET status = 'WAITING' WHERE id = $1`, [waiting]);
    const withWaiting = await scrape();
    expect(sample(withWaiting, "svc_runs_waiting")).toBe(1);
    expect(sample(withWaiting, "svc_queue_depth", { queue: "task/metrics-c" })).toBe(0);
  });

  it("ages a delayed run from when its delay ended, not from when it was triggered", async () => {
    const res = await api.app.inject({ method: "POST", url: "/api/v1/tasks/metrics-delayed/trigger", headers: api.devAuth, payload: { payload: {}, options: { delay: "10m" } } });
    expect(res.statusCode).toBe(200);
    clock.advance(10 * 60_000);
    await fireAllDue(api.engine, clock.now(), [delayedRuns]);
    clock.advance(5_000);
    const body = await scrape();
    expect(sample(body, "svc_queue_depth", { queue: "task/metrics-delayed" })).toBe(1);
    expect(sample(body, "svc_queue_oldest_age_seconds", { queue: "task/metrics-delayed" })).toBe(5);
  });

  it("counts the runs sessions, batches and replays created, never one they found", async () => {
    const count = async () => sample(await scrape(), "svc_runs_triggered_total")!;
    const before = await count();
    const ended = (runId: string) => api.db.pool.query(`UPDATE runs SET status = 'COMPLETED' WHERE id = $1`, [runId]);
    const post = (url: string, payload: Record<string, unknown> = {}) => api.app.inject({ method: "POST", url, headers: api.devAuth, payload });

    // A session's first run; the same externalId while that run lives starts nothing.
    const created = await createSessionOk(api, { externalId: "metrics-chat" });
    expect((await createSessionOk(api, { externalId: "metrics-chat" })).runId).toBe(created.runId);
    expect(await count()).toBe(before + 1);
    // Once its run ended (as a worker writes it), the same create starts the next one.
    await ended(created.runId);
    const next = await createSessionOk(api, { externalId: "metrics-chat" });
    expect(next.isCached).toBe(true);
    expect(next.runId).not.toBe(created.runId);
    expect(await count()).toBe(before + 2);
    // An `.in` record to a session without a live run starts one; the next record, none.
    await ended(next.runId);
    expect((await append(api, created.id, "in", `{"text":"hi"}`)).statusCode).toBe(200);
    expect(await count()).toBe(before + 3);
    expect((await append(api, created.id, "in", `{"text":"again"}`)).statusCode).toBe(200);
    expect(await count()).toBe(before + 3);
    // A hand-over starts a run; a stale caller's starts none (swapped: false).
    const { rows } = await api.db.pool.query<{ current_run_id: string }>(`SELECT current_run_id FROM sessions WHERE id = $1`, [created.id]);
    const handOver = { callingRunId: rows[0]!.current_run_id, reason: "metrics" };
    expect((await post(`/api/v1/sessions/${created.id}/end-and-continue`, handOver)).json()).toMatchObject({ swapped: true });
    expect((await post(`/api/v1/sessions/${created.id}/end-and-continue`, handOver)).json()).toMatchObject({ swapped: false });
    expect(await count()).toBe(before + 4);

    // A batch item an idempotency key answers with an existing run creates nothing.
    const items = [{ task: "metrics-d", payload: { n: 1 }, options: { idempotencyKey: "metrics-batch-key" } }, { task: "metrics-d", payload: { n: 2 } }];
    const batch = await post("/api/v2/tasks/batch", { items });
    expect(batch.statusCode).toBe(202);
    expect(batch.json()).toEqual({ id: expect.any(String), runCount: 2, runs: [expect.any(String), expect.any(String)] });
    expect((await post("/api/v2/tasks/batch", { items })).statusCode).toBe(202);
    expect(await count()).toBe(before + 7);

    // A replay whose idempotency key finds the first replay's run creates nothing.
    const replayed = batch.json().runs[1] as string;
    for (let i = 0; i < 2; i++) expect((await post(`/api/v1/runs/${replayed}/replay`, { idempotencyKey: "metrics-replay-key" })).statusCode).toBe(200);
    expect(await count()).toBe(before + 8);
  });

  it("times requests by route template and status, never by the URL itself", async () => {
    const runId = "run_doesnotexist12345";
    const missing = await api.app.inject({ method: "GET", url: `/api/v3/runs/${runId}`, headers: api.devAuth });
    expect(missing.statusCode).toBe(404);
    const nowhere = await api.app.inject({ method: "GET", url: "/no/such/route/abc123" });
    expect(nowhere.statusCode).toBe(404);
    const text = await scrape();
    expect(sample(text, "svc_http_request_duration_seconds_count", { method: "GET", route: "/api/v3/runs/:runId", status: "404" })).toBe(1);
    expect(sample(text, "svc_http_request_duration_seconds_count", { method: "POST", route: "/api/v1/tasks/:taskId/trigger", status: "200" })).toBeGreaterThanOrEqual(6);
    expect(sample(text, "svc_http_request_duration_seconds_count", { route: "unmatched", status: "404" })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(runId);
    expect(text).not.toContain("abc123");
  });

  it("reports the pool and the process", async () => {
    const text = await scrape();
    expect(sample(text, "svc_db_pool_connections", { state: "in_use" })).toBeGreaterThanOrEqual(0);
    expect(sample(text, "svc_db_pool_connections", { state: "idle" })).toBeGreaterThanOrEqual(0);
    // The scrape's own query may be waiting for a connection of the small test pool as it is read.
    expect(sample(text, "svc_db_pool_waiting")).toBeGreaterThanOrEqual(0);
    expect(sample(text, "svc_db_pool_max")).toBeGreaterThan(0);
    expect(familyNames(text)).toContain("process_cpu_user_seconds_total");
    expect(familyNames(text)).toContain("nodejs_eventloop_lag_seconds");
  });

  it("refuses a missing or wrong token with a 401 JSON error, never a 5xx", async () => {
    for (const authorization of [undefined, "", "Bearer", "Bearer ", "Bearer wrong", `Bearer ${TOKEN}x`, `Basic ${TOKEN}`, TOKEN, `Bearer ${"x".repeat(10_000)}`, "Bearer ünïcödé"]) {
      const res = await api.app.inject({ method: "GET", url: "/metrics", headers: authorization === undefined ? {} : { authorization } });
      expect(res.statusCode, String(authorization).slice(0, 40)).toBe(401);
      expect(res.json()).toEqual({ error: expect.stringContaining("metrics token") });
      expect(res.body).not.toContain("svc_");
    }
    expect((await api.app.inject({ method: "GET", url: "/metrics", headers: { authorization: `bearer ${TOKEN}` } })).statusCode).toBe(200);
    expect((await api.app.inject({ method: "GET", url: "/metrics?x=%zz", headers: { authorization: `Bearer ${TOKEN}` } })).statusCode).toBeLessThan(500);
    const post = await api.app.inject({ method: "POST", url: "/metrics", headers: { authorization: `Bearer ${TOKEN}` } });
    expect(post.statusCode).toBe(405);
  });

  it("is open without a token, and leaves the default process metrics out when told to", async () => {
    const text = await scrape(open);
    expect(sample(text, "svc_runs_triggered_total")).toBe(0);
    expect(familyNames(text)).not.toContain("process_cpu_user_seconds_total");
  });

  it("is not in the OpenAPI document", async () => {
    const doc = (await api.app.inject({ method: "GET", url: "/api/openapi.json" })).json();
    expect(Object.keys(doc.paths)).not.toContain("/metrics");
  });
});
