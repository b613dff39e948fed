// The published SDK's runs.bulk.* against svc on a real port: cancel and replay by filter and by
// ids, progress, list, abort, and runs.list({ bulkAction }) (the runs an action touched). No worker runs here: the test does the workers' part, a chunk at a
// time with processNextChunk, as their timer loops do (packages/worker/test/bulk-actions-loop.test.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestError, ConflictError, configure, NotFoundError, runs, tasks } from "@trigger.dev/sdk";
import { processNextChunk } from "@svc/runtime/engine";
import { configure as configureSvc, runs as svcRuns } from "@svc/runtime";
import { registerTasks } from "./registered-tasks.ts";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
  const baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  api.engine.apiUrl = baseURL;
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  configureSvc({ baseURL, secretKey: api.project.environments.dev.secretKey });
  await registerTasks(api.db.pool, api.project.environments.dev.id, ["bulk-sdk", "bulk-sdk-other", "bulk-sdk-replay", "bulk-sdk-abort"]);
});
afterAll(async () => api?.close());

/** What the workers' timer loops do: chunks until no action is pending. */
async function work(chunkSize = 4): Promise<void> {
  while (await processNextChunk(api.engine, { chunkSize }));
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("@trigger.dev/sdk runs.bulk against svc", () => {
  it("cancels a filter's runs, with progress the SDK reads and polls", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await tasks.trigger("bulk-sdk", { i }, { tags: ["sdk-bulk"] })).id);
    const other = await tasks.trigger("bulk-sdk-other", {}, { tags: ["sdk-bulk"] });

    const { id } = await runs.bulk.cancel({ filter: { tag: "sdk-bulk", taskIdentifier: "bulk-sdk", period: "1h" }, name: "stop sdk-bulk" });
    expect(id).toMatch(/^bulk_/);
    const pending = await runs.bulk.retrieve(id);
    expect(pending).toMatchObject({ id, name: "stop sdk-bulk", type: "CANCEL", status: "PENDING", counts: { total: 6, success: 0, failure: 0 } });
    expect(pending.createdAt).toBeInstanceOf(Date);
    expect(pending.completedAt).toBeUndefined();

    await processNextChunk(api.engine, { chunkSize: 4 });
    expect((await runs.bulk.retrieve(id)).counts).toEqual({ total: 6, success: 4, failure: 0 });
    await work();
    const done = await runs.bulk.poll(id, { pollIntervalMs: 10 });
    expect(done).toMatchObject({ status: "COMPLETED", counts: { total: 6, success: 6, failure: 0 } });
    expect(done.completedAt).toBeInstanceOf(Date);
    for (const runId of ids) expect((await runs.retrieve(runId)).status).toBe("CANCELED");
    expect((await runs.retrieve(other.id)).status).toBe("QUEUED");
    // runs.list({ bulkAction }): the runs it canceled, newest first, over pages; svc's client too.
    const touched = (await collect(runs.list({ bulkAction: id, limit: 4 }))).map((run) => run.id);
    expect(touched).toEqual([...ids].reverse());
    expect((await collect(svcRuns.list({ bulkAction: id }))).map((run) => run.id)).toEqual([...ids].reverse());
    expect(await collect(runs.list({ bulkAction: id, status: "QUEUED" }))).toEqual([]);
  });

  it("replays a list of runs, and lists actions newest first over pages", async () => {
    const a = await tasks.trigger("bulk-sdk-replay", { n: 1 });
    const b = await tasks.trigger("bulk-sdk-replay", { n: 2 });
    const { id } = await runs.bulk.replay({ runIds: [a.id, b.id, "run_nosuchrun"] });
    await work();
    expect(await runs.bulk.retrieve(id)).toMatchObject({ type: "REPLAY", status: "COMPLETED", counts: { total: 3, success: 2, failure: 1 } });
    const replays = (await collect(runs.list({ taskIdentifier: "bulk-sdk-replay" }))).filter((r) => r.id !== a.id && r.id !== b.id);
    expect(replays).toHaveLength(2);
    expect((await Promise.all(replays.map(async (r) => (await runs.retrieve(r.id)).payload.n))).sort()).toEqual([1, 2]);
    // A replay touched the new runs it made (as Trigger.dev marks them), not the runs it replayed.
    expect((await collect(runs.list({ bulkAction: id }))).map((r) => r.id).sort()).toEqual(replays.map((r) => r.id).sort());

    const listed = await collect(runs.bulk.list({ limit: 1 }));
    expect(listed.map((action) => action.id)[0]).toBe(id);
    expect(listed).toHaveLength(2);
    expect(listed[1]).toMatchObject({ type: "CANCEL", status: "COMPLETED" });
  });

  it("aborts a pending action before its next chunk, and refuses to abort it again", async () => {
    for (let i = 0; i < 6; i++) await tasks.trigger("bulk-sdk-abort", { i });
    const { id } = await runs.bulk.cancel({ filter: { taskIdentifier: ["bulk-sdk-abort"] } });
    await processNextChunk(api.engine, { chunkSize: 4 });
    expect(await runs.bulk.abort(id)).toEqual({ id });
    await work();
    expect(await runs.bulk.retrieve(id)).toMatchObject({ status: "ABORTED", counts: { total: 6, success: 4, failure: 0 } });
    const left = await collect(runs.list({ taskIdentifier: "bulk-sdk-abort", status: "QUEUED" }));
    expect(left).toHaveLength(2);
    await expect(runs.bulk.abort(id)).rejects.toBeInstanceOf(ConflictError);
  });

  it("answers bad requests with the SDK's errors", async () => {
    await expect(runs.bulk.retrieve("bulk_nosuchaction")).rejects.toBeInstanceOf(NotFoundError);
    await expect(runs.bulk.abort("bulk_nosuchaction")).rejects.toBeInstanceOf(NotFoundError);
    await expect(runs.bulk.cancel({ filter: { status: "NOT_A_STATUS" as never } })).rejects.toBeInstanceOf(BadRequestError);
    await expect(runs.bulk.cancel({ filter: { machine: "small-1x" } })).rejects.toBeInstanceOf(BadRequestError);
    await expect(runs.list({ bulkAction: "not-a-bulk-action" })).rejects.toBeInstanceOf(BadRequestError);
  });
});
