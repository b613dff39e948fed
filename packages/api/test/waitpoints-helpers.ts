import type { Queryable } from "@svc/runtime/db";
import { newId } from "@svc/runtime/engine";
import { resumeQueueName } from "@svc/worker/queue";
import type { TestApi } from "./harness.ts";

/** POST /api/v1/waitpoints/tokens with the dev key. */
export function createTokenRequest(api: TestApi, body: unknown, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url: "/api/v1/waitpoints/tokens", headers, payload: body as object });
}

/** Creates a token and returns the response body, failing the test on a non-200. */
export async function createTokenOk(api: TestApi, body: unknown = {}): Promise<{ id: string; isCached: boolean; url: string; publicAccessToken: string }> {
  const res = await createTokenRequest(api, body);
  if (res.statusCode !== 200) throw new Error(`create token: ${res.statusCode} ${res.body}`);
  return res.json();
}

export function completeRequest(api: TestApi, id: string, body: unknown, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url: `/api/v1/waitpoints/tokens/${id}/complete`, headers, payload: body as object });
}

export async function tokenRow(api: TestApi, id: string) {
  const { rows } = await api.db.pool.query(`SELECT * FROM waitpoints WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * A run suspended in `wait.forToken(tokenId)`, made by SQL: a WAITING run with one unresolved
 * ledger row pointing at the token (what the in-run side writes before it suspends).
 */
export async function waitingRunOn(db: Queryable, environmentId: string, tokenId: string): Promise<string> {
  const runId = newId.run();
  await db.query(
    `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name)
     SELECT $1, e.id, e.project_id, 'approval-task', 'WAITING', 'task/approval-task' FROM environments e WHERE e.id = $2`,
    [runId, environmentId],
  );
  await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id) VALUES ($1, 0, 'token#0', 'token', $2, $2)`,
    [runId, tokenId],
  );
  return runId;
}

/** Resume jobs pg-boss holds for runs of an environment. */
export async function resumeJobCount(db: Queryable, environmentId: string, runId?: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND ($2::text IS NULL OR data->>'runId' = $2)`,
    [resumeQueueName(environmentId), runId ?? null],
  );
  return rows[0]!.n;
}

export async function ledgerRow(db: Queryable, runId: string) {
  const { rows } = await db.query(`SELECT resolved, outcome FROM run_ledger WHERE run_id = $1`, [runId]);
  return rows[0] as { resolved: boolean; outcome: { ok: boolean; output?: string | null } };
}
