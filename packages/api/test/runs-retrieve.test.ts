import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { completeToken, createToken, getEnvironment, newId } from "@svc/runtime/engine";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { registerTasks } from "./registered-tasks.ts";
import { insertRun, nullPaths, sdkSchemas, triggerTask } from "./runs-fixtures.ts";
import { waitingRunOn } from "./waitpoints-helpers.ts";

let api: TestApi;
let schemas: { RetrieveRunResponse: ZodType; ListRunResponseItem: ZodType };
let devEnv: string;
beforeAll(async () => {
  api = await startTestApi();
  schemas = await sdkSchemas();
  devEnv = api.project.environments.dev.id;
  // Registered, as a worker would: its queued runs read QUEUED (a never-registered task's read PENDING_VERSION).
  await registerTasks(api.db.pool, devEnv, ["hello-world"]);
});
afterAll(async () => api?.close());

async function retrieve(id: string, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "GET", url: `/api/v3/runs/${id}`, headers });
}

describe("GET /api/v3/runs/{id}", () => {
  it("returns a triggered run in the shape the SDK's RetrieveRunResponse schema accepts, with no null fields", async () => {
    // superjson text, as the SDK sends it for { msg: "hi", when: new Date(…) }
    const payload = JSON.stringify({ json: { msg: "hi", when: "2025-01-01T00:00:00.000Z" }, meta: { values: { when: ["Date"] } } });
    const id = await triggerTask(api, {
      payload,
      options: {
        payloadType: "application/super+json",
        idempotencyKey: "d05b61bd4b70e0d9a197ac9360f8c24e4eaed5336d31aafd5e16d829c6576df3",
        idempotencyKeyOptions: { key: "idem-1", scope: "run" },
        tags: ["zeta", "alpha"],
        metadata: { m: 1 },
        ttl: "10m",
      },
    });
    const res = await retrieve(id);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(nullPaths(body)).toEqual([]);
    const parsed = schemas.RetrieveRunResponse.safeParse(body);
    expect(parsed.success, JSON.stringify(parsed.error)).toBe(true);
    expect(body).toMatchObject({
      id,
      status: "QUEUED",
      taskIdentifier: "hello-world",
      idempotencyKey: "idem-1",
      isQueued: true,
      isExecuting: false,
      isCompleted: false,
      isSuccess: false,
      isFailed: false,
      isCancelled: false,
      isTest: false,
      tags: ["alpha", "zeta"],
      metadata: { m: 1 },
      ttl: "10m",
      depth: 0,
      triggerFunction: "trigger",
      attemptCount: 0,
      costInCents: 0,
      baseCostInCents: 0,
      durationMs: 0,
      relatedRuns: { children: [] },
      payload: { msg: "hi", when: "2025-01-01T00:00:00.000Z" },
    });
    expect(body).not.toHaveProperty("output");
    expect(body).not.toHaveProperty("startedAt");
    expect(new Date(body.createdAt).toISOString()).toBe(body.createdAt);
  });

  it("returns the output of a COMPLETED run and the error of a FAILED one, never the other way round", async () => {
    const created = new Date();
    const completed = await insertRun(api, {
      environmentId: devEnv,
      status: "COMPLETED",
      createdAt: created,
      startedAt: new Date(created.getTime() + 1000),
      finishedAt: new Date(created.getTime() + 3500),
      payload: '{"a":1}',
      // superjson text of { total: 3n, at: new Date(…) }
      output: JSON.stringify({ json: { total: "3", at: "2025-02-02T00:00:00.000Z" }, meta: { values: { total: ["bigint"], at: ["Date"] } } }),
      outputType: "application/super+json",
    });
    const done = (await retrieve(completed)).json();
    expect(schemas.RetrieveRunResponse.safeParse(done).success).toBe(true);
    expect(done).toMatchObject({ status: "COMPLETED", isCompleted: true, isSuccess: true, durationMs: 2500, payload: { a: 1 } });
    expect(done.output).toEqual({ total: "3", at: "2025-02-02T00:00:00.000Z" });
    expect(done).not.toHaveProperty("error");

    const failed = await insertRun(api, {
      environmentId: devEnv,
      status: "FAILED",
      createdAt: created,
      output: '"ignored"',
      outputType: "application/json",
      error: { type: "user", name: "TypeError", message: "boom", stack: "TypeError: boom\n    at x" },
    });
    const bad = (await retrieve(failed)).json();
    expect(schemas.RetrieveRunResponse.safeParse(bad).success).toBe(true);
    expect(bad).toMatchObject({ status: "FAILED", isCompleted: true, isFailed: true, error: { message: "boom", name: "TypeError", stackTrace: "TypeError: boom\n    at x" } });
    expect(bad).not.toHaveProperty("output");
  });

  it("reports EXPIRED runs as neither completed nor failed (Trigger.dev's flags)", async () => {
    const id = await insertRun(api, { environmentId: devEnv, status: "EXPIRED", createdAt: new Date() });
    const body = (await retrieve(id)).json();
    expect(body).toMatchObject({ status: "EXPIRED", isCompleted: false, isFailed: false, isQueued: false });
  });

  it("shows parent, root and children in relatedRuns", async () => {
    const parent = await insertRun(api, { environmentId: devEnv, status: "WAITING", createdAt: new Date() });
    const child = await insertRun(api, { environmentId: devEnv, createdAt: new Date(), parentRunId: parent });
    const childBody = (await retrieve(child)).json();
    expect(schemas.RetrieveRunResponse.safeParse(childBody).success).toBe(true);
    expect(childBody.depth).toBe(1);
    expect(childBody.relatedRuns.parent).toMatchObject({ id: parent, status: "WAITING", depth: 0 });
    expect(childBody.relatedRuns.root).toMatchObject({ id: parent });
    const parentBody = (await retrieve(parent)).json();
    expect(parentBody.relatedRuns.children.map((c: { id: string }) => c.id)).toEqual([child]);
    expect(parentBody.relatedRuns).not.toHaveProperty("parent");
  });

  it("includes the schedule of a scheduled run", async () => {
    const scheduleId = newId.schedule();
    await api.db.pool.query(
      `INSERT INTO schedules (id, environment_id, type, task_identifier, cron, external_id, next_run_at)
       VALUES ($1, $2, 'IMPERATIVE', 'hello-world', '0 * * * *', 'user-1', now())`,
      [scheduleId, devEnv],
    );
    const id = await insertRun(api, { environmentId: devEnv, createdAt: new Date(), scheduleId });
    const body = (await retrieve(id)).json();
    expect(schemas.RetrieveRunResponse.safeParse(body).success).toBe(true);
    expect(body.schedule).toMatchObject({ id: scheduleId, externalId: "user-1", generator: { type: "CRON", expression: "0 * * * *" } });
    expect(body.schedule.generator.description).toMatch(/hour/i);
    expect(body.schedule).not.toHaveProperty("deduplicationKey");
  });

  it("names the token a WAITING run waits on, and nothing once the token is completed though the run has not resumed yet", async () => {
    const { waitpoint } = await createToken(api.engine, devEnv, { timeout: "1h" });
    const id = await waitingRunOn(api.db.pool, devEnv, waitpoint.id);
    const body = (await retrieve(id)).json();
    expect(body.waitingFor).toEqual([{ type: "MANUAL", id: waitpoint.id, timeoutAt: waitpoint.timeout_at!.toISOString() }]);
    expect(schemas.RetrieveRunResponse.safeParse(body).success).toBe(true);

    await completeToken(api.engine, api.db.pool, waitpoint.id, { approved: true });
    // No worker here: the run stays WAITING, its resume due.
    expect((await retrieve(id)).json()).toMatchObject({ status: "WAITING", waitingFor: [] });
  });

  it("names the waits of the run's current attempt and its keyed waits, not an earlier attempt's", async () => {
    const [stale, current, keyed] = await Promise.all([1, 2, 3].map(async () => (await createToken(api.engine, devEnv, {})).waitpoint.id));
    const id = await insertRun(api, { environmentId: devEnv, status: "WAITING", createdAt: new Date() });
    await api.db.pool.query(`UPDATE runs SET ledger_epoch = 1 WHERE id = $1`, [id]);
    await api.db.pool.query(
      `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id, created_at)
       VALUES ($1, 0, 'token#0', 'token', $2, $2, now() - interval '2 minutes'), ($1, 1, 'token#0', 'token', $3, $3, now()),
              ($1, -1, 'key:k', 'token', $4, $4, now() - interval '1 minute')`,
      [id, stale, current, keyed],
    );
    expect((await retrieve(id)).json().waitingFor).toMatchObject([
      { type: "MANUAL", id: keyed },
      { type: "MANUAL", id: current },
    ]);
  });

  it("answers 404 Run not found for an unknown id and for a run of another environment", async () => {
    const missing = await retrieve("run_doesnotexist");
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: "Run not found" });
    const id = await triggerTask(api, { payload: { x: 1 } });
    const other = await retrieve(id, { authorization: `Bearer ${api.project.environments.prod.secretKey}` });
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({ error: "Run not found" });
  });

  it("lets a public token read a run only with a matching scope", async () => {
    const id = await triggerTask(api, { payload: 1, options: { tags: ["cust:9"] } });
    const env = (await getEnvironment(api.db.pool, devEnv))!;
    const bearer = async (scopes: string[]) => ({ authorization: `Bearer ${await mintPublicToken(api.deps, env, scopes)}` });
    expect((await retrieve(id, await bearer([`read:runs:${id}`]))).statusCode).toBe(200);
    expect((await retrieve(id, await bearer(["read:tags:cust:9"]))).statusCode).toBe(200);
    expect((await retrieve(id, await bearer(["read:tasks:hello-world"]))).statusCode).toBe(200);
    expect((await retrieve(id, await bearer(["read:runs"]))).statusCode).toBe(200);
    const denied = await retrieve(id, await bearer(["read:runs:run_other", "read:tags:other"]));
    expect(denied.statusCode).toBe(403);
    expect(denied.json().error).toBe("Unauthorized");
  });

  it("never answers 5xx for odd ids", async () => {
    for (const id of ["x", "run_%00", encodeURIComponent("a/b"), "r".repeat(300)]) {
      const res = await retrieve(id);
      expect(res.statusCode, id).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, id).toBeLessThan(500);
    }
  });

  it("documents the runs, batches and packets routes in /api/openapi.json", async () => {
    const doc = (await api.app.inject({ method: "GET", url: "/api/openapi.json" })).json();
    for (const path of ["/api/v1/runs", "/api/v3/runs/{runId}", "/api/v2/runs/{runId}/cancel", "/api/v1/runs/{runId}/replay", "/api/v3/batches", "/api/v3/batches/{batchId}/items", "/api/v2/tasks/batch", "/api/v2/batches/{batchId}"]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(doc.paths["/api/v1/runs"].get.parameters.map((p: { name: string }) => p.name)).toContain("filter[createdAt][period]");
    const retrieved = doc.paths["/api/v3/runs/{runId}"].get.responses["200"].content["application/json"].schema;
    expect(retrieved.required).toContain("waitingFor");
    expect(retrieved.properties.waitingFor.items).toEqual({ $ref: "#/components/schemas/RunWaitingFor" });
    const types = doc.components.schemas.RunWaitingFor.oneOf.map((variant: { properties: { type: { const: string } } }) => variant.properties.type.const);
    expect(types).toEqual(["MANUAL", "DATETIME", "RUN", "BATCH", "SESSION"]);
  });
});
