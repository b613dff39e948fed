import { createRequire } from "node:module";
import type { ZodType } from "zod";
import { newId } from "@svc/runtime/engine";
import type { TestApi } from "./harness.ts";

/** The published SDK's own response schemas (from the @trigger.dev/core the SDK depends on). */
export async function sdkSchemas(): Promise<{ RetrieveRunResponse: ZodType; ListRunResponseItem: ZodType }> {
  const require = createRequire(import.meta.url);
  const corePath = createRequire(require.resolve("@trigger.dev/sdk")).resolve("@trigger.dev/core/v3");
  return (await import(corePath)) as { RetrieveRunResponse: ZodType; ListRunResponseItem: ZodType };
}

/** Paths of every null value in a JSON document (optional fields must be omitted, never null). */
export function nullPaths(value: unknown, path = "$"): string[] {
  if (value === null) return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => nullPaths(v, `${path}[${i}]`));
  if (typeof value === "object") return Object.entries(value as object).flatMap(([k, v]) => nullPaths(v, `${path}.${k}`));
  return [];
}

export async function triggerTask(api: TestApi, body: unknown, taskId = "hello-world", headers: Record<string, string> = api.devAuth): Promise<string> {
  const res = await api.app.inject({ method: "POST", url: `/api/v1/tasks/${encodeURIComponent(taskId)}/trigger`, headers, payload: body as object });
  if (res.statusCode !== 200) throw new Error(`trigger failed: ${res.statusCode} ${res.body}`);
  return res.json().id as string;
}

export interface RunFixture {
  environmentId: string;
  taskIdentifier?: string;
  status?: string;
  createdAt: Date;
  tags?: string[];
  workerVersion?: string | null;
  batchId?: string | null;
  batchIndex?: number | null;
  scheduleId?: string | null;
  isTest?: boolean;
  queueName?: string;
  parentRunId?: string | null;
  payload?: string | null;
  payloadType?: string;
  output?: string | null;
  outputType?: string | null;
  error?: unknown;
  startedAt?: Date | null;
  finishedAt?: Date | null;
}

/** Inserts a run directly, for controlled created_at values and statuses a worker would set. */
export async function insertRun(api: TestApi, run: RunFixture): Promise<string> {
  const id = newId.run();
  await api.db.pool.query(
    `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name, tags, worker_version, batch_id,
       batch_index, schedule_id, is_test, parent_run_id, root_run_id, depth, payload, payload_type, output, output_type, error,
       started_at, finished_at, created_at, updated_at)
     SELECT $1, e.id, e.project_id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, CASE WHEN $12::text IS NULL THEN 0 ELSE 1 END,
       $13, $14, $15, $16, $17, $18, $19, $20, $20
     FROM environments e WHERE e.id = $2`,
    [
      id,
      run.environmentId,
      run.taskIdentifier ?? "hello-world",
      run.status ?? "QUEUED",
      run.queueName ?? `task/${run.taskIdentifier ?? "hello-world"}`,
      run.tags ?? [],
      run.workerVersion ?? null,
      run.batchId ?? null,
      run.batchIndex ?? null,
      run.scheduleId ?? null,
      run.isTest ?? false,
      run.parentRunId ?? null,
      run.payload ?? null,
      run.payloadType ?? "application/json",
      run.output ?? null,
      run.outputType ?? null,
      run.error === undefined ? null : JSON.stringify(run.error),
      run.startedAt ?? null,
      run.finishedAt ?? null,
      run.createdAt,
    ],
  );
  // As the claim that gave the run its version would (migration 0033).
  if (run.workerVersion) {
    await api.db.pool.query(
      `INSERT INTO worker_versions (environment_id, version, seen_until) VALUES ($1, $2, $3::timestamptz + interval '1 minute')
       ON CONFLICT (environment_id, version) DO UPDATE SET seen_until = greatest(worker_versions.seen_until, EXCLUDED.seen_until)`,
      [run.environmentId, run.workerVersion, run.createdAt],
    );
  }
  return id;
}

export async function runStatus(api: TestApi, id: string): Promise<string> {
  const { rows } = await api.db.pool.query<{ status: string }>(`SELECT status FROM runs WHERE id = $1`, [id]);
  return rows[0]!.status;
}
