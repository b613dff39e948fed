import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configure, queues, tasks } from "@trigger.dev/sdk";
import { registerQueues } from "@svc/runtime/engine";
import { startTestApi, type TestApi } from "./harness.ts";

// The queues API with the published SDK, unchanged, against svc on a real port: list, retrieve by
// id, task id and name, pause and resume, override and reset, and what it refuses. That the claims
// obey a pause or an override is tested with workers in packages/worker/test/queue-controls.test.ts.
let api: TestApi;
let baseURL: string;
let secretKey: string;
beforeAll(async () => {
  api = await startTestApi();
  baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  secretKey = api.project.environments.dev.secretKey;
  configure({ baseURL, secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  const env = api.project.environments.dev.id;
  // As a starting worker registers its tasks and their queues: one task with a declared limit on a
  // queue it names, one on its own queue, one on a queue whose name holds a slash.
  await api.db.pool.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, worker_version)
     VALUES ($1, 'q-mailer', 'emails', 2, 'test'), ($1, 'q-solo', 'task/q-solo', NULL, 'test'), ($1, 'q-nested', 'team/a', NULL, 'test')`,
    [env],
  );
  await registerQueues(api.db.pool, env, ["emails", "task/q-solo", "team/a"], new Date());
});
afterAll(async () => api?.close());

async function post(path: string, body: unknown): Promise<{ status: number; body: { error?: string } }> {
  const response = await fetch(`${baseURL}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${secretKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { error?: string } };
}

describe("queues with @trigger.dev/sdk 4.8.3", () => {
  it("lists the environment's queues by name, a page at a time", async () => {
    const page = await queues.list({ perPage: 2 });
    expect(page.data.map((q) => [q.name, q.type])).toEqual([["emails", "custom"], ["q-solo", "task"]]);
    expect(page.pagination).toEqual({ currentPage: 1, totalPages: 2, count: 3 });
    const all = [];
    for await (const q of queues.list({ perPage: 2 })) all.push(q.name);
    expect(all).toEqual(["emails", "q-solo", "team/a"]);
  });

  it("retrieves a queue by id, by task id and by name (a slash included), with its declared limit and runs", async () => {
    await tasks.trigger("q-mailer", {}, { queue: "emails" });
    const byName = await queues.retrieve({ type: "custom", name: "emails" });
    expect(byName).toMatchObject({ name: "emails", type: "custom", paused: false, concurrencyLimit: 2, queued: 1, running: 0 });
    expect(byName.concurrency).toEqual({ current: 2, base: 2, override: null, overriddenAt: null, overriddenBy: null });
    expect(byName.id).toMatch(/^queue_/);
    expect(await queues.retrieve(byName.id)).toEqual(byName);
    expect(await queues.retrieve({ type: "task", name: "q-solo" })).toMatchObject({ name: "q-solo", type: "task", concurrencyLimit: null });
    expect(await queues.retrieve({ type: "custom", name: "team/a" })).toMatchObject({ name: "team/a", type: "custom" });
  });

  it("pauses a queue (its new runs are left to its own claim) and resumes it", async () => {
    const paused = await queues.pause({ type: "task", name: "q-solo" });
    expect(paused.paused).toBe(true);
    const run = await tasks.trigger("q-solo", {});
    const { rows } = await api.db.pool.query<{ status: string; claim_from_runs: boolean }>(`SELECT status, claim_from_runs FROM runs WHERE id = $1`, [run.id]);
    expect(rows[0]).toEqual({ status: "QUEUED", claim_from_runs: false });
    expect((await queues.retrieve(paused.id)).paused).toBe(true);

    const resumed = await queues.resume({ type: "task", name: "q-solo" });
    expect(resumed).toMatchObject({ paused: false, queued: 1 });
    const after = await api.db.pool.query<{ claim_from_runs: boolean }>(`SELECT claim_from_runs FROM runs WHERE id = $1`, [run.id]);
    expect(after.rows[0]!.claim_from_runs).toBe(true);
  });

  it("overrides a queue's concurrencyLimit and resets it to the declared one", async () => {
    const before = Date.now();
    const overridden = await queues.overrideConcurrencyLimit({ type: "custom", name: "emails" }, 7);
    expect(overridden).toMatchObject({ concurrencyLimit: 7, concurrency: { current: 7, base: 2, override: 7, overriddenBy: null } });
    expect(overridden.concurrency!.overriddenAt!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    const reset = await queues.resetConcurrencyLimit(overridden.id);
    expect(reset).toMatchObject({ concurrencyLimit: 2, concurrency: { current: 2, base: 2, override: null, overriddenAt: null } });
    // An override on a queue without a declared limit gives it one; its reset takes it away.
    expect(await queues.overrideConcurrencyLimit({ type: "custom", name: "team/a" }, 0)).toMatchObject({ concurrencyLimit: 0, concurrency: { base: null, override: 0 } });
    expect(await queues.resetConcurrencyLimit({ type: "custom", name: "team/a" })).toMatchObject({ concurrencyLimit: null });
  });

  it("answers 404 for an unknown queue and 400 for a bad limit, action or type", async () => {
    await expect(queues.retrieve("queue_unknown")).rejects.toMatchObject({ status: 404 });
    await expect(queues.pause({ type: "custom", name: "no-such-queue" })).rejects.toMatchObject({ status: 404 });
    await expect(queues.overrideConcurrencyLimit({ type: "task", name: "no-such-task" }, 3)).rejects.toMatchObject({ status: 404 });
    const emails = "/api/v1/queues/emails";
    for (const [path, body] of [
      [`${emails}/concurrency/override`, { type: "custom", concurrencyLimit: -1 }],
      [`${emails}/concurrency/override`, { type: "custom", concurrencyLimit: 1.5 }],
      [`${emails}/concurrency/override`, { type: "custom", concurrencyLimit: 100_001 }],
      [`${emails}/concurrency/override`, { type: "custom" }],
      [`${emails}/pause`, { type: "custom", action: "stop" }],
      [`${emails}/pause`, { type: "queue", action: "pause" }],
    ] as const) {
      const answer = await post(path, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error).toEqual(expect.any(String));
    }
    const badType = await fetch(`${baseURL}${emails}?type=other`, { headers: { authorization: `Bearer ${secretKey}` } });
    expect(badType.status).toBe(400);
    // A gate of a bad shape is a 400 (gates are served: sdk-gates.test.ts); an empty list of named
    // concurrency limits asks for none (sdk-concurrency-limits.test.ts).
    expect((await post("/api/v1/tasks/q-solo/trigger", { payload: {}, options: { gates: [{ queue: "" }] } })).status).toBe(400);
    expect((await tasks.trigger("q-solo", {}, { concurrency: [] })).id).toMatch(/^run_/);
    // Nothing changed.
    expect(await queues.retrieve({ type: "custom", name: "emails" })).toMatchObject({ paused: false, concurrencyLimit: 2 });
  });
});
