import { NotFoundError, type Queryable } from "@svc/runtime/engine";
import type { Principal } from "./principal.ts";
import { requireScope } from "./scopes.ts";

/** What decides who may read a run. */
export interface RunReadSubject {
  id: string;
  taskIdentifier: string;
  tags: readonly string[];
  batchId?: string | null;
}

/**
 * The scopes any one of which lets a public token read the run (Trigger.dev's): the run, its
 * task, any of its tags, its batch, or every run.
 */
export function runReadScopes(run: RunReadSubject): string[] {
  return [
    `read:runs:${run.id}`,
    `read:tasks:${run.taskIdentifier}`,
    ...run.tags.map((tag) => `read:tags:${tag}`),
    ...(run.batchId ? [`read:batch:${run.batchId}`] : []),
    "read:runs",
  ];
}

/**
 * For a public token, checks it may read the run before anything else about the run is loaded
 * (secret keys pass without a query). NotFoundError when the run is not in the environment.
 */
export async function requireRunRead(db: Queryable, principal: Principal, environmentId: string, runId: string): Promise<void> {
  if (principal.kind !== "publicJwt") return;
  const { rows } = await db.query<{ id: string; task_identifier: string; tags: string[]; batch_id: string | null }>(
    `SELECT id, task_identifier, tags, batch_id FROM runs WHERE id = $1 AND environment_id = $2`,
    [runId, environmentId],
  );
  const run = rows[0];
  if (!run) throw new NotFoundError("Run not found");
  requireScope(principal, runReadScopes({ id: run.id, taskIdentifier: run.task_identifier, tags: run.tags, batchId: run.batch_id }));
}
