import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { concurrencyLimits, configure, runs, tasks } from "@trigger.dev/sdk";
import { registerDeclaredLimits } from "@svc/runtime/engine";
import { startTestApi, type TestApi } from "./harness.ts";

// The concurrency-limits API with the published SDK, unchanged, against svc on a real port: list,
// retrieve (the limit, one key's pool), override (bounds, one key), pause and resume, reset (the
// limit, one key), a trigger that holds limits, and what it refuses. That the claims obey the
// limits is tested with workers in packages/worker/test/named-concurrency-limits.test.ts.
let api: TestApi;
let baseURL: string;
let secretKey: string;
beforeAll(async () => {
  api = await startTestApi();
  baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  secretKey = api.project.environments.dev.secretKey;
  configure({ baseURL, secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
});
afterAll(async () => api?.close());

async function send(method: string, path: string, body?: unknown): Promise<{ status: number; body: { error?: string } }> {
  const response = await fetch(`${baseURL}${path}`, {
    method,
    headers: { authorization: `Bearer ${secretKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as { error?: string } };
}

describe("concurrency limits with @trigger.dev/sdk 4.8.3", () => {
  it("overrides a limit's bounds (creating it), retrieves and lists it, resets it", async () => {
    const before = Date.now();
    const set = await concurrencyLimits.override("openai", { total: 5, perKey: 2 });
    expect(set).toMatchObject({ name: "openai", running: 0, queued: 0, paused: false });
    expect(set.id).toMatch(/^climit_/);
    expect(set.total).toMatchObject({ current: 5, base: null, override: 5 });
    expect(set.perKey).toMatchObject({ current: 2, base: null, override: 2 });
    expect(set.total.overriddenAt!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    // Only the bound given changes.
    const narrowed = await concurrencyLimits.override("openai", { perKey: 1 });
    expect(narrowed.perKey.current).toBe(1);
    expect(narrowed.total.current).toBe(5);

    await concurrencyLimits.override("anthropic", { total: 3 });
    await concurrencyLimits.override("zeta", { total: 1 });
    const page = await concurrencyLimits.list({ perPage: 2 });
    expect(page.data.map((l) => l.name)).toEqual(["anthropic", "openai"]);
    expect(page.pagination).toEqual({ currentPage: 1, totalPages: 2, count: 3 });
    const all: string[] = [];
    for await (const l of concurrencyLimits.list({ perPage: 2 })) all.push(l.name);
    expect(all).toEqual(["anthropic", "openai", "zeta"]);

    expect(await concurrencyLimits.retrieve("anthropic")).toMatchObject({ name: "anthropic", total: { current: 3 } });
    const reset = await concurrencyLimits.reset("anthropic");
    expect(reset.total).toEqual({ current: null, base: null, override: null, overriddenAt: null });
  });

  it("overrides one concurrency key's perKey until its ttl, retrieves that key's pool, resets it", async () => {
    const before = Date.now();
    const key = await concurrencyLimits.override("openai", { concurrencyKey: "tenant-1", perKey: 0, ttl: "1h" });
    expect(key).toMatchObject({ name: "openai", concurrencyKey: "tenant-1", running: 0, paused: false, perKey: { current: 0, base: 1, override: 0 } });
    expect(key.perKey.expiresAt!.getTime()).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
    expect(key.perKey.expiresAt!.getTime()).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1000);
    expect(await concurrencyLimits.retrieve("openai", { concurrencyKey: "tenant-1" })).toMatchObject({ perKey: { current: 0, override: 0 } });
    // Another key is under the limit's own perKey.
    expect(await concurrencyLimits.retrieve("openai", { concurrencyKey: "tenant-2" })).toMatchObject({ perKey: { current: 1, base: 1, override: null, expiresAt: null } });
    const reset = await concurrencyLimits.reset("openai", { concurrencyKey: "tenant-1" });
    expect(reset).toMatchObject({ concurrencyKey: "tenant-1", perKey: { current: 1, override: null, expiresAt: null } });
  });

  it("pauses and resumes a limit", async () => {
    expect((await concurrencyLimits.pause("openai")).paused).toBe(true);
    expect((await concurrencyLimits.retrieve("openai")).paused).toBe(true);
    expect((await concurrencyLimits.retrieve("openai", { concurrencyKey: "k" })).paused).toBe(true);
    expect((await concurrencyLimits.resume("openai")).paused).toBe(false);
    // Pausing a limit nobody set creates it, paused.
    expect(await concurrencyLimits.pause("fresh")).toMatchObject({ name: "fresh", paused: true, total: { current: null } });
  });

  it("triggers runs that hold named limits, counted as queued by each limit", async () => {
    const run = await tasks.trigger("cl-task", {}, { concurrency: ["openai", "zeta"], concurrencyKey: "tenant-1" });
    const { rows } = await api.db.pool.query<{ concurrency_limits: string[]; claim_from_runs: boolean }>(
      `SELECT concurrency_limits, claim_from_runs FROM runs WHERE id = $1`,
      [run.id],
    );
    expect(rows[0]).toEqual({ concurrency_limits: ["openai", "zeta"], claim_from_runs: false });
    expect((await concurrencyLimits.retrieve("openai")).queued).toBe(1);
    expect((await concurrencyLimits.retrieve("zeta")).queued).toBe(1);
    // A batch item and a replay hold them too.
    const batch = await tasks.batchTrigger("cl-task", [{ payload: {}, options: { concurrency: ["anthropic"] } }, { payload: {} }]);
    const replayed = await runs.replay(run.id);
    const held = await api.db.pool.query<{ id: string; concurrency_limits: string[] | null }>(
      `SELECT id, concurrency_limits FROM runs WHERE batch_id = $1 OR id = $2 ORDER BY batch_index NULLS LAST`,
      [batch.batchId, replayed.id],
    );
    expect(held.rows.map((r) => r.concurrency_limits)).toEqual([["anthropic"], null, ["openai", "zeta"]]);
    // An empty list holds none: a plain run.
    const plain = await tasks.trigger("cl-task", {}, { concurrency: [] });
    const { rows: plainRows } = await api.db.pool.query(`SELECT concurrency_limits, claim_from_runs FROM runs WHERE id = $1`, [plain.id]);
    expect(plainRows[0]).toEqual({ concurrency_limits: null, claim_from_runs: true });
  });

  it("shows the bounds task code declares as each limit's base, which an override sits on and a reset returns to", async () => {
    // As a worker registers tasks declaring concurrency: [{ total: 2 }, "cl-declared"] and cl-declared's bounds.
    const env = api.project.environments.dev.id;
    await api.db.pool.query(
      `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version, concurrency_limits, concurrency_declared)
       VALUES ($1, 'cl-declaring', 'task/cl-declaring', 'test', $2, $3)`,
      [env, ["cl-declared", "task/cl-declaring"], JSON.stringify([{ name: "cl-declared", per_key: 1, total: 4 }, { name: "task/cl-declaring", per_key: null, total: 2 }])],
    );
    await registerDeclaredLimits(api.db.pool, env, new Date());

    const declared = await concurrencyLimits.retrieve("cl-declared");
    expect(declared.total).toEqual({ current: 4, base: 4, override: null, overriddenAt: null });
    expect(declared.perKey).toMatchObject({ current: 1, base: 1, override: null });
    const overridden = await concurrencyLimits.override("cl-declared", { total: 9 });
    expect(overridden.total).toMatchObject({ current: 9, base: 4, override: 9 });
    expect(overridden.perKey).toMatchObject({ current: 1, base: 1, override: null });
    const reset = await concurrencyLimits.reset("cl-declared");
    expect(reset.total).toEqual({ current: 4, base: 4, override: null, overriddenAt: null });

    // The inline limit, by the name Trigger.dev derives for it (the SDK encodes the slash).
    expect((await concurrencyLimits.retrieve("task/cl-declaring")).total).toMatchObject({ current: 2, base: 2 });
    const names: string[] = [];
    for await (const l of concurrencyLimits.list()) names.push(l.name);
    expect(names).toEqual(expect.arrayContaining(["cl-declared", "task/cl-declaring"]));

    // A trigger gives the run the task's declared limits; its own names replace the named ones.
    const held = await tasks.trigger("cl-declaring", {});
    const replaced = await tasks.trigger("cl-declaring", {}, { concurrency: ["openai"] });
    const { rows } = await api.db.pool.query(`SELECT id, concurrency_limits FROM runs WHERE id = ANY ($1) ORDER BY created_at`, [[held.id, replaced.id]]);
    expect(rows.map((r) => r.concurrency_limits)).toEqual([["cl-declared", "task/cl-declaring"], ["openai", "task/cl-declaring"]]);
    // A replay holds what its run held (the inline limit again from the task, not as a trigger's name).
    const replayed = await runs.replay(replaced.id);
    const again = await api.db.pool.query(`SELECT concurrency_limits FROM runs WHERE id = $1`, [replayed.id]);
    expect(again.rows[0].concurrency_limits).toEqual(["openai", "task/cl-declaring"]);
  });

  it("refuses bad input with a 4xx that says why", async () => {
    const bad: [string, string, unknown, number][] = [
      ["GET", "/api/v1/concurrency-limits/nope", undefined, 404],
      ["GET", "/api/v1/concurrency-limits/nope?concurrencyKey=k", undefined, 404],
      ["POST", "/api/v1/concurrency-limits/nope/reset", {}, 404],
      ["POST", "/api/v1/concurrency-limits/nope/reset", { concurrencyKey: "k" }, 404],
      ["GET", "/api/v1/concurrency-limits/bad%20name", undefined, 400],
      ["GET", `/api/v1/concurrency-limits/${"x".repeat(123)}`, undefined, 400],
      ["GET", "/api/v1/concurrency-limits?page=0", undefined, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", {}, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", { total: -1 }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", { total: 1.5 }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", { perKey: 100_001 }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", { total: 1, ttl: "1h" }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", { concurrencyKey: "k" }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", { concurrencyKey: "k", perKey: 1, total: 2 }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", { concurrencyKey: "", perKey: 1 }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", { concurrencyKey: "k", perKey: 1, ttl: "31d" }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", { concurrencyKey: "k", perKey: 1, ttl: "soon" }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/override", { total: 1, other: true }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/pause", { action: "stop" }, 400],
      ["POST", "/api/v1/concurrency-limits/openai/pause", {}, 400],
      ["POST", "/api/v1/concurrency-limits/openai/reset", { concurrencyKey: 5.5, extra: 1 }, 400],
      ["POST", "/api/v1/tasks/cl-task/trigger", { payload: {}, options: { concurrency: ["a", "b", "c"] } }, 400],
      ["POST", "/api/v1/tasks/cl-task/trigger", { payload: {}, options: { concurrency: ["has space"] } }, 400],
      ["POST", "/api/v1/tasks/cl-task/trigger", { payload: {}, options: { concurrency: "openai" } }, 400],
      // Gates are served (sdk-gates.test.ts); a bad one is a 400.
      ["POST", "/api/v1/tasks/cl-task/trigger", { payload: {}, options: { gates: [{ name: "emails" }] } }, 400],
    ];
    for (const [method, path, body, status] of bad) {
      const answer = await send(method, path, body);
      expect(answer.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(status);
      expect(answer.body.error).toEqual(expect.any(String));
    }
    // Nothing changed.
    expect(await concurrencyLimits.retrieve("openai")).toMatchObject({ perKey: { current: 1 }, total: { current: 5 }, paused: false });
  });
});
