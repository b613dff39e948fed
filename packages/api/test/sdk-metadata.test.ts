import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, configure, runs, tasks } from "@trigger.dev/sdk";
import { ApiClient } from "@trigger.dev/core/v3";
import { startListeningApi, type ListeningApi } from "./client-server.ts";

// The published SDK's metadata calls, unchanged, against svc: its API client's updateRunMetadata
// (what Trigger.dev's task runtime flushes with) and getRunMetadata, runs.retrieve, and a
// realtime subscriber that sees each change. No worker runs: the runs stay QUEUED.
let api: ListeningApi;
let client: ApiClient;
beforeAll(async () => {
  api = await startListeningApi({ limits: { realtimeLivePollMs: 5000 } });
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  client = new ApiClient(api.baseURL, api.project.environments.dev.secretKey, undefined, { retry: { maxAttempts: 1 } });
});
afterAll(async () => api?.close());

const put = (runId: string, body: unknown) =>
  api.app.inject({ method: "PUT", url: `/api/v1/runs/${runId}/metadata`, headers: { ...api.devAuth, "content-type": "application/json" }, payload: JSON.stringify(body) });

describe("PUT/GET /api/v1/runs/{id}/metadata", () => {
  it("applies the SDK's operations in order and returns the metadata, which runs.retrieve shows", async () => {
    const { id } = await tasks.trigger("meta-task", {}, { metadata: { user: "ada", count: 1, list: ["a", "b", { c: 1 }], nested: { n: 1 } } });
    const result = await client.updateRunMetadata(id, {
      operations: [
        { type: "increment", key: "count", value: 4 },
        { type: "increment", key: "count", value: -2 },
        { type: "append", key: "list", value: "d" },
        { type: "remove", key: "list", value: { c: 1 } },
        { type: "set", key: "$.nested.n", value: 2 },
        { type: "set", key: "$.missing.n", value: 2 },
        { type: "append", key: "fresh", value: 1 },
        { type: "delete", key: "user" },
      ],
    });
    const expected = { count: 3, list: ["a", "b", "d"], nested: { n: 2 }, fresh: [1] };
    expect(result.metadata).toEqual(expected);
    expect((await client.getRunMetadata(id)).metadata).toEqual(expected);
    expect((await runs.retrieve(id)).metadata).toEqual(expected);
  });

  it("replaces the metadata with `metadata` when no operations are given, and `update` replaces it too", async () => {
    const { id } = await tasks.trigger("meta-task", {}, { metadata: { a: 1 } });
    expect((await client.updateRunMetadata(id, { metadata: { b: 2 } })).metadata).toEqual({ b: 2 });
    expect((await client.updateRunMetadata(id, { operations: [{ type: "update", value: { c: 3 } }, { type: "set", key: "d", value: 4 }] })).metadata).toEqual({ c: 3, d: 4 });
  });

  it("applies parentOperations and rootOperations to the run's parent and root", async () => {
    const root = await tasks.trigger("meta-task", {}, { metadata: { done: 0 } });
    // A child run as triggerAndWait makes it (the SDK sends no parent from outside a task).
    const child = await tasks.trigger("meta-task", {});
    await api.db.pool.query(`UPDATE runs SET parent_run_id = $1, root_run_id = $1 WHERE id = $2`, [root.id, child.id]);
    await client.updateRunMetadata(child.id, { operations: [{ type: "set", key: "mine", value: true }], parentOperations: [{ type: "increment", key: "done", value: 1 }], rootOperations: [{ type: "append", key: "children", value: child.id }] });
    expect((await client.getRunMetadata(root.id)).metadata).toEqual({ done: 1, children: [child.id] });
    expect((await client.getRunMetadata(child.id)).metadata).toEqual({ mine: true });
    // Only ancestors' operations: the run's own metadata stays as it is.
    const onlyParent = await put(child.id, { parentOperations: [{ type: "increment", key: "done", value: 1 }], rootOperations: [] });
    expect(onlyParent.statusCode).toBe(200);
    expect(onlyParent.json().metadata).toEqual({ mine: true });
    expect((await client.getRunMetadata(root.id)).metadata).toEqual({ done: 2, children: [child.id] });
  });

  it("reaches a realtime subscriber as a change of the run", async () => {
    const handle = await tasks.trigger("meta-task", {}, { metadata: { progress: 0 } });
    const seen: unknown[] = [];
    await auth.withAuth({ accessToken: handle.publicAccessToken }, async () => {
      for await (const run of runs.subscribeToRun(handle.id)) {
        seen.push(run.metadata);
        if (seen.length === 1) {
          await expect.poll(() => api.deps.runChanges!.size, { timeout: 5000, interval: 10 }).toBeGreaterThanOrEqual(1);
          await client.updateRunMetadata(handle.id, { operations: [{ type: "set", key: "progress", value: 0.5 }] });
        } else break;
      }
    });
    expect(seen).toEqual([{ progress: 0 }, { progress: 0.5 }]);
  });

  it("refuses metadata over 256 KiB with 413 and leaves the run's metadata as it was", async () => {
    const { id } = await tasks.trigger("meta-task", {}, { metadata: { keep: 1 } });
    const response = await put(id, { operations: [{ type: "set", key: "big", value: "x".repeat(300 * 1024) }] });
    expect(response.statusCode).toBe(413);
    expect(response.json().error).toMatch(/over the limit of 262144 bytes/);
    expect((await client.getRunMetadata(id)).metadata).toEqual({ keep: 1 });
  });

  it("answers bad input with a 4xx and a message", async () => {
    const { id } = await tasks.trigger("meta-task", {});
    const cases: [unknown, number, RegExp][] = [
      [{ operations: [{ type: "set", key: "__proto__", value: 1 }] }, 400, /__proto__/],
      [{ operations: [{ type: "set", key: "$.", value: 1 }] }, 400, /segment below \$/],
      [{ operations: [{ type: "increment", key: "n", value: "1" }] }, 400, /operations/],
      [{ operations: [{ type: "explode", key: "n" }] }, 400, /operations/],
      [{ metadata: [1, 2] }, 400, /metadata/],
      [{}, 400, /metadata.*operations/],
    ];
    for (const [body, status, message] of cases) {
      const response = await put(id, body);
      expect({ body, status: response.statusCode }).toEqual({ body, status });
      expect(response.json().error).toMatch(message);
    }
    const unknown = await put("run_doesnotexist", { operations: [] });
    expect(unknown.statusCode).toBe(404);
    const get = await api.app.inject({ method: "GET", url: `/api/v1/runs/run_doesnotexist/metadata`, headers: api.devAuth });
    expect(get.statusCode).toBe(404);
  });

  it("refuses a change of a run that finished more than an hour ago (422)", async () => {
    const { id } = await tasks.trigger("meta-task", {});
    await api.db.pool.query(`UPDATE runs SET status = 'COMPLETED', finished_at = now() - interval '2 hours' WHERE id = $1`, [id]);
    const response = await put(id, { operations: [{ type: "set", key: "late", value: true }] });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toEqual({ error: "Cannot update metadata for a completed run" });
  });

  it("lets a public token read the metadata of its run but not change it", async () => {
    const handle = await tasks.trigger("meta-task", {}, { metadata: { a: 1 } });
    const read = await api.app.inject({ method: "GET", url: `/api/v1/runs/${handle.id}/metadata`, headers: { authorization: `Bearer ${handle.publicAccessToken}` } });
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual({ metadata: { a: 1 } });
    const write = await api.app.inject({ method: "PUT", url: `/api/v1/runs/${handle.id}/metadata`, headers: { authorization: `Bearer ${handle.publicAccessToken}`, "content-type": "application/json" }, payload: "{}" });
    expect(write.statusCode).toBeGreaterThanOrEqual(401);
    expect(write.statusCode).toBeLessThan(404);
  });
});
