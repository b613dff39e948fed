import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHANNELS, completeWaitpoint, getEnvironment, insertWaitpoint, newId, withTransaction } from "@svc/runtime/engine";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { insertRun, runStatus, triggerTask } from "./runs-fixtures.ts";

let api: TestApi;
let devEnv: string;
beforeAll(async () => {
  api = await startTestApi();
  devEnv = api.project.environments.dev.id;
});
afterAll(async () => api?.close());

async function cancel(id: string, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url: `/api/v2/runs/${id}/cancel`, headers });
}

/** A MANUAL waitpoint and the ledger entry of `runId` waiting on it. */
async function waitOnToken(runId: string, type: "MANUAL" | "RUN" = "MANUAL", completedByRunId?: string): Promise<string> {
  const waitpoint = await insertWaitpoint(api.db.pool, {
    id: newId.waitpoint(),
    environmentId: devEnv,
    type,
    completedByRunId: completedByRunId ?? null,
    createdAt: new Date(),
  });
  await api.db.pool.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id) VALUES ($1, 0, $2, $3, $4, $4)`,
    [runId, `${type}#0`, type === "MANUAL" ? "token" : "child", waitpoint.id],
  );
  return waitpoint.id;
}

async function ledger(runId: string) {
  const { rows } = await api.db.pool.query(`SELECT resolved, outcome FROM run_ledger WHERE run_id = $1`, [runId]);
  return rows;
}

describe("POST /api/v2/runs/{id}/cancel", () => {
  it("cancels a QUEUED run and a DELAYED run", async () => {
    const queued = await triggerTask(api, { payload: 1 });
    const res = await cancel(queued);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: queued });
    const { rows } = await api.db.pool.query(`SELECT status, finished_at FROM runs WHERE id = $1`, [queued]);
    expect(rows[0].status).toBe("CANCELED");
    expect(rows[0].finished_at).toBeInstanceOf(Date);

    const delayed = await triggerTask(api, { payload: 1, options: { delay: "1h" } });
    expect(await runStatus(api, delayed)).toBe("DELAYED");
    expect((await cancel(delayed)).statusCode).toBe(200);
    expect(await runStatus(api, delayed)).toBe("CANCELED");
  });

  it("leaves a finished run as it is and still answers 200 {id}", async () => {
    const done = await insertRun(api, { environmentId: devEnv, status: "COMPLETED", createdAt: new Date() });
    const res = await cancel(done);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: done });
    expect(await runStatus(api, done)).toBe("COMPLETED");
    expect((await cancel(done)).statusCode).toBe(200);
  });

  it("drops a WAITING run's pending waits so completing the token later resumes nothing", async () => {
    const run = await insertRun(api, { environmentId: devEnv, status: "WAITING", createdAt: new Date() });
    const token = await waitOnToken(run);
    expect((await cancel(run)).statusCode).toBe(200);
    expect(await runStatus(api, run)).toBe("CANCELED");
    expect(await ledger(run)).toEqual([]);
    const completed = await withTransaction(api.db.pool, (tx) => completeWaitpoint(api.engine, tx, token, { ok: true, output: '"late"', outputType: "application/json" }));
    expect(completed).toMatchObject({ changed: true, resumedRunIds: [] });
    expect(await runStatus(api, run)).toBe("CANCELED");
  });

  it("notifies svc_run_canceled with the run id when the run is EXECUTING", async () => {
    const run = await insertRun(api, { environmentId: devEnv, status: "EXECUTING", createdAt: new Date(), startedAt: new Date() });
    const listener = new pg.Client({ connectionString: api.db.url });
    await listener.connect();
    try {
      await listener.query(`LISTEN ${CHANNELS.runCanceled}`);
      const heard = new Promise<string | undefined>((resolve) => listener.on("notification", (n) => n.channel === CHANNELS.runCanceled && resolve(n.payload)));
      expect((await cancel(run)).statusCode).toBe(200);
      expect(await heard).toBe(run);
      expect(await runStatus(api, run)).toBe("CANCELED");
    } finally {
      await listener.end();
    }
  });

  it("cancels unfinished descendants too, and leaves finished ones alone", async () => {
    const parent = await insertRun(api, { environmentId: devEnv, status: "EXECUTING", createdAt: new Date() });
    const child = await insertRun(api, { environmentId: devEnv, createdAt: new Date(), parentRunId: parent });
    const doneChild = await insertRun(api, { environmentId: devEnv, status: "COMPLETED", createdAt: new Date(), parentRunId: parent });
    const grandchild = await insertRun(api, { environmentId: devEnv, status: "DELAYED", createdAt: new Date(), parentRunId: child });
    expect((await cancel(parent)).statusCode).toBe(200);
    expect(await runStatus(api, parent)).toBe("CANCELED");
    expect(await runStatus(api, child)).toBe("CANCELED");
    expect(await runStatus(api, grandchild)).toBe("CANCELED");
    expect(await runStatus(api, doneChild)).toBe("COMPLETED");
  });

  it("resumes a parent waiting on the canceled child with a failed outcome", async () => {
    const parent = await insertRun(api, { environmentId: devEnv, status: "WAITING", createdAt: new Date() });
    const child = await insertRun(api, { environmentId: devEnv, status: "EXECUTING", createdAt: new Date(), parentRunId: parent });
    await waitOnToken(parent, "RUN", child);
    expect((await cancel(child)).statusCode).toBe(200);
    expect(await runStatus(api, parent)).toBe("WAITING");
    const [entry] = await ledger(parent);
    expect(entry.resolved).toBe(true);
    expect(entry.outcome).toMatchObject({ ok: false, error: { code: "CANCELED" } });
  });

  it("answers 404 for an unknown run and for another environment's run", async () => {
    const missing = await cancel("run_nope");
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: "Run not found" });
    const run = await triggerTask(api, { payload: 1 });
    const other = await cancel(run, { authorization: `Bearer ${api.project.environments.staging.secretKey}` });
    expect(other.statusCode).toBe(404);
    expect(await runStatus(api, run)).toBe("QUEUED");
    expect((await cancel(run, {})).statusCode).toBe(401);
    expect((await cancel("run_%00x")).statusCode).toBe(400);
  });

  it("accepts a public token with write:runs:<id> and refuses a read-only one", async () => {
    const env = (await getEnvironment(api.db.pool, devEnv))!;
    const run = await triggerTask(api, { payload: 1 });
    const readOnly = await cancel(run, { authorization: `Bearer ${await mintPublicToken(api.deps, env, [`read:runs:${run}`])}` });
    expect(readOnly.statusCode).toBe(403);
    expect(await runStatus(api, run)).toBe("QUEUED");
    const writer = await cancel(run, { authorization: `Bearer ${await mintPublicToken(api.deps, env, [`write:runs:${run}`])}` });
    expect(writer.statusCode).toBe(200);
    expect(await runStatus(api, run)).toBe("CANCELED");
  });
});
