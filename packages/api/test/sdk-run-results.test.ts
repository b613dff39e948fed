import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, configure, NotFoundError, runs, tasks } from "@trigger.dev/sdk";
import { ApiClient, AuthenticationError } from "@trigger.dev/core/v3";
import { startTestApi, type TestApi } from "./harness.ts";
import { insertRun, type RunFixture } from "./runs-fixtures.ts";

// What finished runs produced, read through the published SDK's API client, whose zod schemas
// check every answer: a run's result, a batch's results, a stored payload's download URL. No
// worker runs: runs are finished by cancel, or written finished as a worker would leave them.
let api: TestApi;
let baseURL: string;
let client: ApiClient;

beforeAll(async () => {
  api = await startTestApi();
  baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  api.engine.apiUrl = baseURL;
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  client = new ApiClient(baseURL, api.project.environments.dev.secretKey, undefined, { retry: { maxAttempts: 1 } });
});
afterAll(async () => api?.close());

const finished = (fields: Omit<RunFixture, "createdAt">) =>
  insertRun(api, { taskIdentifier: "result-task", createdAt: new Date(), startedAt: new Date(), finishedAt: new Date(), ...fields });

describe("a run's result (GET /api/v1/runs/{id}/result)", () => {
  it("is the output as stored for a COMPLETED run", async () => {
    const env = api.env.id;
    const json = await finished({ environmentId: env, status: "COMPLETED", output: '{"total":3}', outputType: "application/json" });
    expect(await client.getRunResult(json)).toEqual({ ok: true, id: json, taskIdentifier: "result-task", output: '{"total":3}', outputType: "application/json" });
    const stored = await finished({ environmentId: env, status: "COMPLETED", output: "result-task/run_x/output.json", outputType: "application/store" });
    expect(await client.getRunResult(stored)).toMatchObject({ ok: true, output: "result-task/run_x/output.json", outputType: "application/store" });
    const nothing = await finished({ environmentId: env, status: "COMPLETED", output: null, outputType: null });
    expect(await client.getRunResult(nothing)).toEqual({ ok: true, id: nothing, taskIdentifier: "result-task", outputType: "application/json" });
  });

  it("is the error, as one of the SDK's error types, for every other final status", async () => {
    const env = api.env.id;
    const thrown = await finished({ environmentId: env, status: "FAILED", error: { type: "user", name: "TypeError", message: "boom", stackTrace: "TypeError: boom\n    at x" } });
    expect(await client.getRunResult(thrown)).toEqual({
      ok: false, id: thrown, taskIdentifier: "result-task", error: { type: "BUILT_IN_ERROR", name: "TypeError", message: "boom", stackTrace: "TypeError: boom\n    at x" },
    });
    const crashed = await finished({ environmentId: env, status: "CRASHED", error: { type: "internal", name: "WORKER_CRASHED", code: "WORKER_CRASHED", message: "gone" } });
    expect((await client.getRunResult(crashed))).toMatchObject({ ok: false, error: { type: "INTERNAL_ERROR", code: "TASK_RUN_CRASHED", message: "gone" } });
    const timedOut = await finished({ environmentId: env, status: "TIMED_OUT", error: { type: "internal", name: "MAX_DURATION_EXCEEDED", code: "MAX_DURATION_EXCEEDED", message: "too long" } });
    expect((await client.getRunResult(timedOut))).toMatchObject({ ok: false, error: { type: "INTERNAL_ERROR", code: "MAX_DURATION_EXCEEDED" } });
    const unreadable = await finished({ environmentId: env, status: "FAILED", error: { type: "internal", name: "PAYLOAD_UNREADABLE", code: "PAYLOAD_UNREADABLE", message: "bad" } });
    expect((await client.getRunResult(unreadable))).toMatchObject({ ok: false, error: { type: "BUILT_IN_ERROR", name: "PAYLOAD_UNREADABLE", message: "bad", stackTrace: "" } });
    const expired = await finished({ environmentId: env, status: "EXPIRED", startedAt: null });
    expect((await client.getRunResult(expired))).toMatchObject({ ok: false, error: { type: "INTERNAL_ERROR", code: "UNSPECIFIED_ERROR", message: "The run expired: it was not started within its TTL" } });
    const { id: canceled } = await tasks.trigger("result-task", { n: 1 });
    await runs.cancel(canceled);
    expect(await client.getRunResult(canceled)).toEqual({ ok: false, id: canceled, taskIdentifier: "result-task", error: { type: "INTERNAL_ERROR", code: "TASK_RUN_CANCELLED", message: "The run was canceled" } });
  });

  it("is a 404 while the run has not finished, and for a run of another environment (the SDK answers undefined)", async () => {
    const { id } = await tasks.trigger("result-task", { n: 2 });
    expect(await client.getRunResult(id)).toBeUndefined();
    const res = await api.app.inject({ method: "GET", url: `/api/v1/runs/${id}/result`, headers: api.devAuth });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: `Run ${id} has not finished (it is QUEUED)` });
    expect(await client.getRunResult("run_doesnotexist")).toBeUndefined();
    const prod = new ApiClient(baseURL, api.project.environments.prod.secretKey, undefined, { retry: { maxAttempts: 1 } });
    const done = await finished({ environmentId: api.env.id, status: "COMPLETED", output: '"x"', outputType: "application/json" });
    expect(await prod.getRunResult(done)).toBeUndefined();
    // A run's own public token cannot read results (Trigger.dev's route takes secret keys only).
    const handle = await tasks.trigger("result-task", { n: 3 });
    await expect(new ApiClient(baseURL, handle.publicAccessToken).getRunResult(handle.id)).rejects.toThrow(AuthenticationError);
  });
});

describe("a batch's results (GET /api/v1/batches/{id}/results)", () => {
  it("are the results of its finished runs in item order, runs an idempotency key answered items with included", async () => {
    const earlier = await tasks.trigger("result-task", { n: 0 }, { idempotencyKey: "batch-results-key" });
    await runs.cancel(earlier.id);
    const batch = await tasks.batchTrigger("result-task", [
      { payload: { n: 0 }, options: { idempotencyKey: "batch-results-key" } },
      { payload: { n: 1 } },
      { payload: { n: 2 } },
      { payload: { n: 3 } },
    ]);
    const retrieved = await client.retrieveBatch(batch.batchId);
    expect(retrieved).toMatchObject({ id: batch.batchId, status: "PENDING", runCount: 4, processing: { errors: [] } });
    expect(retrieved.processing.completedAt).toBeInstanceOf(Date);
    const members = retrieved.runs;
    expect(members[0]).toBe(earlier.id);
    await runs.cancel(members[3]!);
    await api.db.pool.query(`UPDATE runs SET status = 'COMPLETED', output = '{"n":1}', output_type = 'application/json', finished_at = now() WHERE id = $1`, [members[1]]);
    const results = (await client.getBatchResults(batch.batchId))!;
    expect(results.id).toBe(batch.batchId);
    expect(results.items.map((r) => [r.id, r.ok])).toEqual([[earlier.id, false], [members[1], true], [members[3], false]]);
    expect(results.items[1]).toEqual({ ok: true, id: members[1], taskIdentifier: "result-task", output: '{"n":1}', outputType: "application/json" });
  });

  it("are a 404 for an unknown batch or one of another environment", async () => {
    await expect(client.getBatchResults("batch_doesnotexist")).rejects.toThrow(NotFoundError);
    const batch = await tasks.batchTrigger("result-task", [{ payload: { n: 1 } }]);
    const prod = new ApiClient(baseURL, api.project.environments.prod.secretKey, undefined, { retry: { maxAttempts: 1 } });
    await expect(prod.getBatchResults(batch.batchId)).rejects.toThrow(NotFoundError);
    const bad = await api.app.inject({ method: "GET", url: "/api/v1/batches/nul%00/results", headers: api.devAuth });
    expect(bad.statusCode).toBe(400);
  });
});

describe("a run's stored payload (GET /api/v1/runs/{id}/packets/{field})", () => {
  it("gives a download URL to a token that may read the run, however the packet is named", async () => {
    const big = { text: "z".repeat(200_000) };
    const handle = await tasks.trigger("result-task", big);
    const { rows } = await api.db.pool.query(`SELECT payload, payload_type FROM runs WHERE id = $1`, [handle.id]);
    expect(rows[0].payload_type).toBe("application/store");
    const asRun = new ApiClient(baseURL, handle.publicAccessToken, undefined, { retry: { maxAttempts: 1 } });
    const { presignedUrl } = await asRun.getRunPacketUrl(handle.id, "payload", rows[0].payload);
    const download = await fetch(presignedUrl);
    expect(download.status).toBe(200);
    // The SDK stored it as SuperJSON.
    expect(JSON.parse(await download.text())).toEqual({ json: big });
    // The secret key too, and a token for the run's tag.
    expect((await client.getRunPacketUrl(handle.id, "payload", "ignored")).presignedUrl).toMatch(/\/api\/v1\/packets\/download\//);
    const other = await tasks.trigger("result-task", { n: 1 });
    await expect(new ApiClient(baseURL, other.publicAccessToken).getRunPacketUrl(handle.id, "payload", rows[0].payload)).rejects.toThrow();
    const denied = await api.app.inject({ method: "GET", url: `/api/v1/runs/${handle.id}/packets/payload`, headers: { authorization: `Bearer ${other.publicAccessToken}` } });
    expect(denied.statusCode).toBe(403);
    const tagToken = await auth.createPublicToken({ scopes: { read: { tags: ["nope"] } } });
    expect((await api.app.inject({ method: "GET", url: `/api/v1/runs/${handle.id}/packets/payload`, headers: { authorization: `Bearer ${tagToken}` } })).statusCode).toBe(403);
  });

  it("is a 404 for a payload kept inline and an output not stored, and a 400 for another field", async () => {
    const { id } = await tasks.trigger("result-task", { small: true });
    for (const field of ["payload", "output"]) {
      const res = await api.app.inject({ method: "GET", url: `/api/v1/runs/${id}/packets/${field}`, headers: api.devAuth });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: `Run not found, or its ${field} is not stored as a packet` });
    }
    const res = await api.app.inject({ method: "GET", url: `/api/v1/runs/${id}/packets/metadata`, headers: api.devAuth });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/field/);
  });
});
