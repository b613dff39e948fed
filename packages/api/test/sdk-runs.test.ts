import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, configure, NotFoundError, runs, tasks } from "@trigger.dev/sdk";
import { registerTasks } from "./registered-tasks.ts";
import { startTestApi, type TestApi } from "./harness.ts";

// The published SDK, unchanged, against svc on a real port. No worker runs: runs stay QUEUED.
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
  const baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  // Presigned packet URLs must point at this listener.
  api.engine.apiUrl = baseURL;
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  // Registered, as a worker would: their queued runs read QUEUED (a never-registered task's read PENDING_VERSION).
  await registerTasks(api.db.pool, api.project.environments.dev.id, ["hello-world", "pager-task", "cancel-task"]);
});
afterAll(async () => api?.close());

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("@trigger.dev/sdk runs, tasks and batches against svc", () => {
  it("triggers (idempotently), retrieves with the user's key and a Date payload, and reads with the run's public token", async () => {
    const when = new Date("2025-01-01T00:00:00.000Z");
    const handle = await tasks.trigger("hello-world", { msg: "hi", when }, { idempotencyKey: "idem-1", tags: ["t1", "t2"], metadata: { m: 1 }, ttl: "10m", concurrencyKey: "ck" });
    expect(handle.id).toMatch(/^run_/);
    expect(handle.publicAccessToken.split(".")).toHaveLength(3);
    const again = await tasks.trigger("hello-world", { msg: "other" }, { idempotencyKey: "idem-1" });
    expect(again.id).toBe(handle.id);

    const run = await runs.retrieve(handle.id);
    expect(run).toMatchObject({
      id: handle.id,
      status: "QUEUED",
      taskIdentifier: "hello-world",
      idempotencyKey: "idem-1",
      isQueued: true,
      isCompleted: false,
      tags: ["t1", "t2"],
      metadata: { m: 1 },
      ttl: "10m",
      depth: 0,
      triggerFunction: "trigger",
      attemptCount: 0,
      payload: { msg: "hi", when: when.toISOString() },
    });
    expect(run.createdAt).toBeInstanceOf(Date);
    expect(run.output).toBeUndefined();

    const viaToken = await auth.withAuth({ accessToken: handle.publicAccessToken }, () => runs.retrieve(handle.id));
    expect(viaToken.id).toBe(handle.id);
  });

  it("throws NotFoundError for an unknown run", async () => {
    await expect(runs.retrieve("run_doesnotexist")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("batch-triggers through the two-phase v3 endpoints, idempotently", async () => {
    const result = await tasks.batchTrigger("batch-task", [{ payload: { i: 0 } }, { payload: { i: 1 }, options: { tags: ["batch-tag"] } }], { idempotencyKey: "batch-1" });
    expect(result.batchId).toMatch(/^batch_/);
    expect(result.runCount).toBe(2);
    const members = await collect(runs.list({ batch: result.batchId }));
    expect(members.map((r) => r.taskIdentifier)).toEqual(["batch-task", "batch-task"]);
    const tagged = members.find((r) => r.tags.includes("batch-tag"))!;
    expect((await runs.retrieve(tagged.id)).payload).toEqual({ i: 1 });
    expect((await runs.retrieve(tagged.id)).batchId).toBe(result.batchId);

    const cached = await tasks.batchTrigger("batch-task", [{ payload: { i: 0 } }, { payload: { i: 1 } }], { idempotencyKey: "batch-1" });
    expect(cached.batchId).toBe(result.batchId);
    expect(await collect(runs.list({ batch: result.batchId }))).toHaveLength(2);
  });

  it("lists with filters and iterates every page", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await tasks.trigger("pager-task", { i }, { tags: ["pager"] })).id);
    await tasks.trigger("pager-task", { i: 99 }, { tags: ["other"] });

    const all = await collect(runs.list({ status: ["QUEUED", "DELAYED"], taskIdentifier: "pager-task", tag: "pager", period: "1d", limit: 2 }));
    expect(all.map((r) => r.id)).toEqual([...ids].reverse());
    expect(all.every((r) => r.env.name === "dev")).toBe(true);

    const page = await runs.list({ tag: "pager", limit: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.hasNextPage()).toBe(true);
    const next = await page.getNextPage();
    expect(next.data.map((r) => r.id)).toEqual([ids[2], ids[1]]);

    const ranged = await collect(runs.list({ tag: ["pager", "nothing"], from: new Date(Date.now() - 3_600_000), to: new Date(Date.now() + 60_000), limit: 10 }));
    expect(ranged).toHaveLength(5);
    expect(await collect(runs.list({ taskIdentifier: "pager-task", status: "COMPLETED" }))).toEqual([]);
  });

  it("cancels and replays", async () => {
    const { id } = await tasks.trigger("cancel-task", { n: 1 }, { tags: ["c"] });
    expect(await runs.cancel(id)).toEqual({ id });
    const canceled = await runs.retrieve(id);
    expect(canceled).toMatchObject({ status: "CANCELED", isCancelled: true, isCompleted: true, isFailed: true });
    expect(await runs.cancel(id)).toEqual({ id });

    const replayed = await runs.replay(id);
    expect(replayed.id).not.toBe(id);
    expect(await runs.retrieve(replayed.id)).toMatchObject({ status: "QUEUED", taskIdentifier: "cancel-task", tags: ["c"], payload: { n: 1 } });
  });

  it("shows a run of a task no worker of the environment ever registered as PENDING_VERSION, and QUEUED once one registers it", async () => {
    const { id } = await tasks.trigger("not-deployed-yet", { n: 1 });
    expect(await runs.retrieve(id)).toMatchObject({ id, status: "PENDING_VERSION", isQueued: true, isExecuting: false, isCompleted: false });
    const pending = await collect(runs.list({ status: "PENDING_VERSION", period: "1h" }));
    expect(pending.map((r) => r.id)).toContain(id);
    expect(pending.find((r) => r.id === id)).toMatchObject({ status: "PENDING_VERSION", isQueued: true });
    expect(pending.every((r) => r.status === "PENDING_VERSION")).toBe(true);
    expect((await collect(runs.list({ status: "QUEUED", period: "1h" }))).map((r) => r.id)).not.toContain(id);
    // Trigger.dev's legacy name for it filters the same runs.
    expect((await collect(runs.list({ status: "WAITING_FOR_DEPLOY" as "PENDING_VERSION", taskIdentifier: "not-deployed-yet" }))).map((r) => r.id)).toEqual([id]);

    // A worker registers the task (it has it in its tasks file now): the same run reads QUEUED.
    await registerTasks(api.db.pool, api.project.environments.dev.id, ["not-deployed-yet"]);
    expect(await runs.retrieve(id)).toMatchObject({ id, status: "QUEUED", isQueued: true });
    expect((await collect(runs.list({ status: "QUEUED", taskIdentifier: "not-deployed-yet" }))).map((r) => r.id)).toEqual([id]);
    expect(await collect(runs.list({ status: "PENDING_VERSION", taskIdentifier: "not-deployed-yet" }))).toEqual([]);
  });

  it("offloads a 200 KB payload through the packet handshake and runs with it", async () => {
    const big = "x".repeat(200_000);
    const { id } = await tasks.trigger("big-task", { big });
    const { rows } = await api.db.pool.query(`SELECT payload_type, payload FROM runs WHERE id = $1`, [id]);
    expect(rows[0].payload_type).toBe("application/store");
    expect(rows[0].payload).toMatch(/payload\.json$/);
    expect((await runs.retrieve(id)).payload).toEqual({ big });
  });

  it("reads a payload too large to inline through its expiring download URL", async () => {
    const huge = "y".repeat(600_000);
    const { id } = await tasks.trigger("big-task", { huge, when: new Date("2025-01-01T00:00:00.000Z") });
    const run = await runs.retrieve(id);
    expect(run.payload).toEqual({ huge, when: new Date("2025-01-01T00:00:00.000Z") });
  });
});
