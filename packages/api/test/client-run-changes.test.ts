// svc's own client for what changes runs after their trigger and what a run produced: reschedule,
// tags, replay overrides, idempotency key reset, results, batches, traces, against the real API.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { BadRequestError, batches, configure, idempotencyKeys, NotFoundError, runs, tasksClient, UnprocessableEntityError } from "@svc/runtime";
import { clearServiceEnvironment, NO_RETRY, startListeningApi, type ListeningApi } from "./client-server.ts";

let api: ListeningApi;

beforeAll(async () => {
  api = await startListeningApi();
});
afterAll(async () => api?.close());
beforeEach(() => {
  clearServiceEnvironment();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
});

describe("runs.reschedule, runs.addTags, runs.replay with overrides", () => {
  it("moves a DELAYED run (a duration or a Date) and refuses any other", async () => {
    const handle = await tasksClient.trigger("client-later", { n: 1 }, { delay: "1h" });
    const at = new Date(Date.now() + 3 * 3_600_000);
    const moved = await runs.reschedule(handle.id, { delay: at });
    expect(moved).toMatchObject({ id: handle.id, status: "DELAYED", payload: { n: 1 } });
    expect(moved.delayedUntil).toEqual(at);
    expect((await runs.reschedule(handle.id, { delay: "2h" })).delayedUntil!.getTime()).toBeGreaterThan(Date.now() + 3_599_000);
    const queued = await tasksClient.trigger("client-later", { n: 2 });
    await expect(runs.reschedule(queued.id, { delay: "1h" })).rejects.toThrow(BadRequestError);
    await expect(runs.reschedule("run_doesnotexist", { delay: "1h" })).rejects.toThrow(NotFoundError);
  });

  it("adds tags, and refuses an 11th", async () => {
    const { id } = await tasksClient.trigger("client-tags", {}, { tags: ["a"] });
    expect(await runs.addTags(id, ["b", "a"])).toEqual({ message: "Successfully set 1 new tags." });
    expect(await runs.addTags(id, "c")).toEqual({ message: "Successfully set 1 new tags." });
    expect((await runs.retrieve(id)).tags).toEqual(["a", "b", "c"]);
    await expect(runs.addTags(id, Array.from({ length: 8 }, (_, i) => `x${i}`))).rejects.toThrow(UnprocessableEntityError);
  });

  it("replays with a new payload, delay, tags, metadata and queue", async () => {
    const { id } = await tasksClient.trigger("client-replay", { v: 1 }, { tags: ["old"] });
    const replayed = await runs.replay(id, { payload: { v: 2 }, delay: "30m", tags: ["new"], metadata: { m: 2 }, queue: "client-queue" });
    const run = await runs.retrieve(replayed.id);
    expect(run).toMatchObject({ status: "DELAYED", payload: { v: 2 }, tags: ["new"], metadata: { m: 2 } });
    expect((await runs.retrieve((await runs.replay(id)).id)).payload).toEqual({ v: 1 });
  });
});

describe("idempotencyKeys.reset", () => {
  it("frees the key for the next trigger, and says when no run holds it", async () => {
    const first = await tasksClient.trigger("client-idem", { n: 1 }, { idempotencyKey: "order-7" });
    expect((await tasksClient.trigger("client-idem", { n: 2 }, { idempotencyKey: "order-7" })).id).toBe(first.id);
    expect(await idempotencyKeys.reset("client-idem", "order-7")).toEqual({ id: "order-7" });
    const second = await tasksClient.trigger("client-idem", { n: 3 }, { idempotencyKey: "order-7" });
    expect(second).toMatchObject({ isCached: false });
    expect(second.id).not.toBe(first.id);
    await expect(idempotencyKeys.reset("other-task", "order-7")).rejects.toThrow(NotFoundError);
  });
});

describe("runs.result, batches, runs.trace and runs.events", () => {
  it("gives a finished run's result, and undefined while it has not finished", async () => {
    const { id } = await tasksClient.trigger("client-result", { n: 1 });
    expect(await runs.result(id)).toBeUndefined();
    await runs.cancel(id);
    expect(await runs.result(id)).toEqual({ ok: false, id, taskIdentifier: "client-result", error: { type: "INTERNAL_ERROR", code: "TASK_RUN_CANCELLED", message: "The run was canceled" } });
  });

  it("retrieves a batch and its runs' results", async () => {
    const handle = await tasksClient.batchTrigger("client-batch", [{ payload: { n: 0 } }, { payload: { n: 1 } }]);
    const batch = await batches.retrieve(handle.batchId);
    expect(batch).toMatchObject({ id: handle.batchId, status: "PENDING", runCount: 2, processing: { errors: [] } });
    expect(batch.createdAt).toBeInstanceOf(Date);
    expect(batch.processing.completedAt).toBeInstanceOf(Date);
    expect((await batches.results(handle.batchId)).items).toEqual([]);
    await runs.cancel(batch.runs[1]!);
    expect((await batches.results(handle.batchId)).items.map((r) => [r.id, r.ok])).toEqual([[batch.runs[1], false]]);
  });

  it("gives a run's trace and events", async () => {
    const { id } = await tasksClient.trigger("client-trace", { n: 1 }, { delay: "1h" });
    const trace = await runs.trace(id);
    expect(trace.rootSpan).toMatchObject({ runId: id, data: { message: "client-trace", isPartial: true }, children: [] });
    const events = await runs.events(id);
    expect(events).toEqual([expect.objectContaining({ spanId: trace.rootSpan.id, parentId: null, message: "client-trace" })]);
  });
});
