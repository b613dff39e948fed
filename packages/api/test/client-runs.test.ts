// Triggering and runs through the global functions, against the real API.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  ApiClient,
  AuthenticationError,
  BadRequestError,
  configure,
  NotFoundError,
  runs,
  tasksClient,
  UnprocessableEntityError,
} from "@svc/runtime";
import { registerTasks } from "./registered-tasks.ts";
import { clearServiceEnvironment, environmentOfRun, NO_RETRY, startListeningApi, type ListeningApi } from "./client-server.ts";

let api: ListeningApi;

beforeAll(async () => {
  api = await startListeningApi();
  // Registered, as a worker would: their runs read QUEUED (a never-registered task's read PENDING_VERSION).
  await registerTasks(api.db.pool, api.project.environments.dev.id, ["hello-world", "filtered"]);
});
afterAll(async () => api?.close());
beforeEach(() => {
  clearServiceEnvironment();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
});

describe("tasksClient.trigger + runs.retrieve", () => {
  it("triggers a run and reads it back with its payload, tags and dates", async () => {
    const handle = await tasksClient.trigger("hello-world", { name: "Ada", when: "2024-01-01" }, { tags: ["user:1"], metadata: { a: 1 } });
    expect(handle).toMatchObject({ id: expect.stringMatching(/^run_/), isCached: false });
    const run = await runs.retrieve(handle.id);
    expect(run).toMatchObject({ id: handle.id, status: "QUEUED", taskIdentifier: "hello-world", payload: { name: "Ada", when: "2024-01-01" }, tags: ["user:1"] });
    expect(run.createdAt).toBeInstanceOf(Date);
    expect(run.relatedRuns).toBeTypeOf("object");
  });

  it("keeps a string payload a string and sends no payload for undefined", async () => {
    const str = await runs.retrieve((await tasksClient.trigger("t", "123")).id);
    expect(str.payload).toBe("123");
    const none = await runs.retrieve((await tasksClient.trigger("t", undefined)).id);
    expect(none.payload).toBeUndefined();
  });

  it("sends the idempotency key raw and gets the same run back, reporting the key as given", async () => {
    const first = await tasksClient.trigger("idem", { n: 1 }, { idempotencyKey: "order-42" });
    const second = await tasksClient.trigger("idem", { n: 2 }, { idempotencyKey: "order-42" });
    expect(second).toMatchObject({ id: first.id, isCached: true });
    expect((await runs.retrieve(first.id)).idempotencyKey).toBe("order-42");
    const { rows } = await api.db.pool.query("SELECT idempotency_key FROM runs WHERE id = $1", [first.id]);
    expect(rows[0].idempotency_key).toBe("order-42");
  });

  it("passes delay (a Date), queue by name and maxAttempts through", async () => {
    const until = new Date(Date.now() + 3_600_000);
    const handle = await tasksClient.trigger("later", {}, { delay: until, queue: "slow-lane", maxAttempts: 2 });
    const run = await runs.retrieve(handle.id);
    expect(run.status).toBe("DELAYED");
    expect(run.delayedUntil?.getTime()).toBe(until.getTime());
    const { rows } = await api.db.pool.query("SELECT queue_name, max_attempts FROM runs WHERE id = $1", [handle.id]);
    expect(rows[0]).toEqual({ queue_name: "slow-lane", max_attempts: 2 });
  });

  it("uploads a payload of 128 KiB or more as a packet first", async () => {
    const big = { blob: "x".repeat(140 * 1024) };
    const handle = await tasksClient.trigger("big", big);
    const { rows } = await api.db.pool.query("SELECT payload_type FROM runs WHERE id = $1", [handle.id]);
    expect(rows[0].payload_type).toBe("application/store");
    const run = await runs.retrieve(handle.id);
    expect((run.payload as typeof big).blob.length).toBe(big.blob.length);
  });
});

describe("tasksClient.batchTrigger", () => {
  it("creates a batch and its runs in two phases", async () => {
    const batch = await tasksClient.batchTrigger("resize", [{ payload: { n: 1 } }, { payload: { n: 2 }, options: { tags: ["b"] } }, { payload: { n: 3 } }]);
    expect(batch).toMatchObject({ batchId: expect.stringMatching(/^batch_/), runCount: 3, isCached: false });
    const { rows } = await api.db.pool.query("SELECT payload, tags FROM runs WHERE batch_id = $1 ORDER BY batch_index", [batch.batchId]);
    expect(rows.map((r) => JSON.parse(r.payload).n)).toEqual([1, 2, 3]);
    expect(rows[1].tags).toEqual(["b"]);
  });

  it("returns the cached batch for a repeated idempotency key without sending items again", async () => {
    const first = await tasksClient.batchTrigger("resize", [{ payload: 1 }], { idempotencyKey: "batch-key" });
    const second = await tasksClient.batchTrigger("resize", [{ payload: 1 }], { idempotencyKey: "batch-key" });
    expect(second).toMatchObject({ batchId: first.batchId, isCached: true });
  });

  it("refuses an empty batch before any request", async () => {
    await expect(tasksClient.batchTrigger("resize", [])).rejects.toThrow(/at least one item/);
  });
});

describe("runs.list", () => {
  it("walks every page with for await, and exposes the first page's data", async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await tasksClient.trigger("paged", { i })).id);
    const page = await runs.list({ taskIdentifier: "paged", limit: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.hasNextPage()).toBe(true);
    const seen: string[] = [];
    for await (const run of runs.list({ taskIdentifier: "paged", limit: 2 })) seen.push(run.id);
    expect(seen).toEqual([...ids].reverse());
    const second = await page.getNextPage();
    expect(second.data.map((r) => r.id)).toEqual(seen.slice(2, 4));
  });

  it("filters by status, tag and period", async () => {
    const tagged = await tasksClient.trigger("filtered", {}, { tags: ["pick-me"] });
    await tasksClient.trigger("filtered", {});
    const page = await runs.list({ tag: "pick-me", status: ["QUEUED", "DELAYED"], period: "1h" });
    expect(page.data.map((r) => r.id)).toEqual([tagged.id]);
    expect(page.data[0]!.createdAt).toBeInstanceOf(Date);
  });
});

describe("runs.cancel and runs.replay", () => {
  it("cancels a queued run, and cancelling again is a no-op", async () => {
    const { id } = await tasksClient.trigger("cancel-me", {});
    expect(await runs.cancel(id)).toEqual({ id });
    expect((await runs.retrieve(id)).status).toBe("CANCELED");
    expect(await runs.cancel(id)).toEqual({ id });
  });

  it("replays a run as a new run with the same payload", async () => {
    const { id } = await tasksClient.trigger("replay-me", { v: 7 });
    const replay = await runs.replay(id);
    expect(replay.id).not.toBe(id);
    const run = await runs.retrieve(replay.id);
    expect(run).toMatchObject({ taskIdentifier: "replay-me", payload: { v: 7 } });
    expect(await environmentOfRun(api, replay.id)).toBe(api.project.environments.dev.id);
  });
});

describe("errors", () => {
  it("maps 404 to NotFoundError with the server's message", async () => {
    const error = await runs.retrieve("run_doesnotexist").catch((e) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.status).toBe(404);
    expect(error.message).toMatch(/not found/i);
  });

  it("maps 400 to BadRequestError and 422 to UnprocessableEntityError", async () => {
    await expect(tasksClient.trigger("t", {}, { delay: "soonish" })).rejects.toBeInstanceOf(BadRequestError);
    const tags = Array.from({ length: 11 }, (_, i) => `t${i}`);
    const error = await tasksClient.trigger("t", {}, { tags }).catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.message).toMatch(/10 tags/);
  });

  it("maps 401 to AuthenticationError", async () => {
    const client = new ApiClient({ baseURL: api.baseURL, secretKey: "svc_prod_nope", requestOptions: NO_RETRY });
    const error = await client.runs.list().catch((e) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.message).toMatch(/Invalid API key/);
  });

  it("never returns another environment's run: a prod key sees dev runs as not found", async () => {
    const { id } = await tasksClient.trigger("t", {});
    const prod = new ApiClient({ baseURL: api.baseURL, secretKey: api.project.environments.prod.secretKey, requestOptions: NO_RETRY });
    await expect(prod.runs.retrieve(id)).rejects.toBeInstanceOf(NotFoundError);
  });
});
