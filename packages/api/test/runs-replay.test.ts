import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getEnvironment } from "@svc/runtime/engine";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { insertRun, triggerTask } from "./runs-fixtures.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

async function replay(id: string, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url: `/api/v1/runs/${id}/replay`, headers });
}

const COPIED = `task_identifier, payload, payload_type, queue_name, tags, metadata, concurrency_key, status`;

async function row(id: string) {
  const { rows } = await api.db.pool.query(`SELECT ${COPIED}, idempotency_key, parent_run_id FROM runs WHERE id = $1`, [id]);
  return rows[0];
}

describe("POST /api/v1/runs/{id}/replay", () => {
  it("triggers a new run with the same task, payload, type, queue, tags, metadata and concurrency key", async () => {
    const original = await triggerTask(
      api,
      {
        payload: '{"json":{"n":1}}',
        options: { payloadType: "application/super+json", queue: { name: "q-replay" }, tags: ["a", "b"], metadata: { m: 1 }, concurrencyKey: "ck" },
      },
      "replay-task",
    );
    const res = await replay(original);
    expect(res.statusCode).toBe(200);
    const { id } = res.json();
    expect(id).toMatch(/^run_/);
    expect(id).not.toBe(original);
    const before = await row(original);
    const after = await row(id);
    expect(after).toEqual({ ...before, status: "QUEUED" });
    expect(after).toMatchObject({ payload: '{"json":{"n":1}}', payload_type: "application/super+json", queue_name: "q-replay", concurrency_key: "ck" });
  });

  it("works from a finished run and is not idempotent", async () => {
    const original = await triggerTask(api, { payload: { x: 1 }, options: { idempotencyKey: "once" } });
    const done = await insertRun(api, { environmentId: api.project.environments.dev.id, status: "FAILED", createdAt: new Date(), payload: '"text"' });
    const first = (await replay(original)).json().id;
    const second = (await replay(original)).json().id;
    expect(new Set([original, first, second]).size).toBe(3);
    expect((await row(first)).idempotency_key).toBeNull();
    const fromFailed = await replay(done);
    expect(fromFailed.statusCode).toBe(200);
    expect((await row(fromFailed.json().id)).payload).toBe('"text"');
  });

  it("applies the SDK's replay overrides (payload, tags, metadata, queue, idempotency key)", async () => {
    const original = await triggerTask(api, { payload: { v: 1 }, options: { tags: ["old"], metadata: { m: 1 } } }, "replay-over");
    const post = (payload: unknown) => api.app.inject({ method: "POST", url: `/api/v1/runs/${original}/replay`, headers: api.devAuth, payload: payload as object });
    const res = await post({ payload: { v: 2 }, tags: ["new"], metadata: { m: 2 }, queue: "q-new", idempotencyKey: "replay-key" });
    expect(res.statusCode).toBe(200);
    const { rows } = await api.db.pool.query(`SELECT payload, payload_type, tags, metadata, queue_name, idempotency_key FROM runs WHERE id = $1`, [res.json().id]);
    expect(rows[0]).toEqual({ payload: '{"v":2}', payload_type: "application/json", tags: ["new"], metadata: { m: 2 }, queue_name: "q-new", idempotency_key: "replay-key" });
    expect((await post({ idempotencyKey: "replay-key" })).json().id).toBe(res.json().id);

    const typo = await post({ payloads: 1 });
    expect(typo.statusCode).toBe(400);
    expect(typo.json().error).toMatch(/Invalid request body/);
    const badDelay = await post({ delay: "whenever" });
    expect(badDelay.statusCode).toBe(400);
    expect(badDelay.json().error).toMatch(/delay/);
  });

  it("answers overrides sent with a non-JSON Content-Type with 415; an empty body of any type replays as is", async () => {
    const original = await triggerTask(api, { payload: { v: 1 } }, "replay-form");
    const post = (contentType: string, payload: string) =>
      api.app.inject({ method: "POST", url: `/api/v1/runs/${original}/replay`, headers: { ...api.devAuth, "content-type": contentType }, payload });
    for (const contentType of ["application/x-www-form-urlencoded", "text/plain"]) {
      const res = await post(contentType, JSON.stringify({ payload: { v: 2 } }));
      expect(res.statusCode, contentType).toBe(415);
      expect(res.json()).toEqual({ error: `Content-Type must be application/json (got ${contentType})` });
    }
    const empty = await post("application/octet-stream", "");
    expect(empty.statusCode).toBe(200);
    expect((await row(empty.json().id)).payload).toBe('{"v":1}');
  });

  it("answers 404 for unknown or other-environment runs and refuses public tokens", async () => {
    expect((await replay("run_missing")).statusCode).toBe(404);
    const run = await triggerTask(api, { payload: 1 });
    const other = await replay(run, { authorization: `Bearer ${api.project.environments.prod.secretKey}` });
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({ error: "Run not found" });
    const env = (await getEnvironment(api.db.pool, api.project.environments.dev.id))!;
    const jwt = await mintPublicToken(api.deps, env, ["admin"]);
    expect((await replay(run, { authorization: `Bearer ${jwt}` })).statusCode).toBe(401);
  });

  describe("from: failure (svc's extension)", () => {
    const dev = () => api.project.environments.dev.id;
    const post = (id: string, payload: object) => api.app.inject({ method: "POST", url: `/api/v1/runs/${id}/replay`, headers: api.devAuth, payload });
    async function record(runId: string, entries: [epoch: number, stepKey: string, kind: string, target: string | null, resolved: boolean][]) {
      for (const [epoch, stepKey, kind, target, resolved] of entries) {
        await api.db.pool.query(
          `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, resolved, outcome) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [runId, epoch, stepKey, kind, target, resolved, resolved ? { ok: true, value: `{"json":"${stepKey}"}` } : null],
        );
      }
    }

    it("starts a new run whose ledger is the failed attempt's resolved entries (keyed ones too), hooks and pending waits left out", async () => {
      const parent = await insertRun(api, { environmentId: dev(), status: "COMPLETED", createdAt: new Date() });
      const failed = await insertRun(api, { environmentId: dev(), status: "FAILED", createdAt: new Date(), payload: '{"n":1}', tags: ["t"], parentRunId: parent });
      await api.db.pool.query(`UPDATE runs SET ledger_epoch = 1 WHERE id = $1`, [failed]);
      await record(failed, [
        [0, "#0", "step", "from-the-first-attempt", true],
        [1, "#0", "step", "one", true],
        [1, "#1", "token", "waitpoint_done", true],
        [1, "#2", "step", "hook:onStartAttempt", true],
        [1, "hook:onStartAttempt", "step", "hook:onStartAttempt", true],
        [1, "#3", "token", "waitpoint_pending", false],
        [-1, "key:k1", "step", "keyed", true],
        [-1, "hook:onStart", "step", "hook:onStart", true],
      ]);
      const res = await post(failed, { from: "failure" });
      expect(res.statusCode).toBe(200);
      const { id } = res.json();
      expect(await row(id)).toEqual({ ...(await row(failed)), status: "QUEUED", parent_run_id: parent });
      const { rows } = await api.db.pool.query(`SELECT epoch, step_key, target, resolved FROM run_ledger WHERE run_id = $1 ORDER BY epoch, step_key`, [id]);
      expect(rows).toEqual([
        { epoch: -1, step_key: "key:k1", target: "keyed", resolved: true },
        { epoch: 1, step_key: "#0", target: "one", resolved: true },
        { epoch: 1, step_key: "#1", target: "waitpoint_done", resolved: true },
        { epoch: 1, step_key: "#2", target: "hook:onStartAttempt", resolved: true },
      ]);
      const { rows: run } = await api.db.pool.query(`SELECT ledger_epoch, attempt_number, offered_at FROM runs WHERE id = $1`, [id]);
      expect(run[0]).toEqual({ ledger_epoch: 1, attempt_number: 0, offered_at: null });

      const ledger = await api.app.inject({ method: "GET", url: `/api/v1/runs/${id}/ledger`, headers: api.devAuth });
      expect(ledger.statusCode).toBe(200);
      expect(ledger.json()).toMatchObject({ runId: id, taskIdentifier: "hello-world", status: "QUEUED", attemptNumber: 0, epoch: 1 });
      expect(ledger.json().entries.map((e: { stepKey: string; epoch: number }) => `${e.epoch} ${e.stepKey}`).sort()).toEqual(["-1 key:k1", "1 #0", "1 #1", "1 #2"]);
      expect(ledger.json().entries.find((e: { stepKey: string }) => e.stepKey === "#0")).toEqual({
        stepKey: "#0", epoch: 1, kind: "step", target: "one", waitpointId: null, resolved: true, outcome: { ok: true, value: '{"json":"#0"}' }, expiresAt: null, usedEpoch: null,
      });
    });

    it("replays each failing status; refuses every other status with 422, a changed payload and an unknown from with 400", async () => {
      for (const status of ["FAILED", "CRASHED", "SYSTEM_FAILURE", "TIMED_OUT"]) {
        const id = await insertRun(api, { environmentId: dev(), status, createdAt: new Date() });
        expect((await post(id, { from: "failure" })).statusCode, status).toBe(200);
      }
      for (const status of ["COMPLETED", "CANCELED", "EXPIRED", "QUEUED", "EXECUTING", "WAITING", "DELAYED"]) {
        const id = await insertRun(api, { environmentId: dev(), status, createdAt: new Date() });
        const res = await post(id, { from: "failure" });
        expect(res.statusCode, status).toBe(422);
        expect(res.json()).toEqual({
          error: `Run ${id} is ${status}: only a run that ended FAILED, CRASHED, SYSTEM_FAILURE, TIMED_OUT can be replayed from its failure (replay it from the start instead)`,
        });
        // From the start, as before.
        expect((await post(id, { from: "start" })).statusCode, status).toBe(200);
      }
      const failed = await insertRun(api, { environmentId: dev(), status: "FAILED", createdAt: new Date() });
      const changed = await post(failed, { from: "failure", payload: { other: true } });
      expect(changed.statusCode).toBe(400);
      expect(changed.json().error).toMatch(/^payload cannot be changed when replaying from the failure/);
      const unknown = await post(failed, { from: "middle" });
      expect(unknown.statusCode).toBe(400);
      expect(unknown.json().error).toMatch(/from/);
      expect((await post("run_missing", { from: "failure" })).statusCode).toBe(404);
      expect((await api.app.inject({ method: "GET", url: `/api/v1/runs/run_missing/ledger`, headers: api.devAuth })).statusCode).toBe(404);
    });
  });
});
