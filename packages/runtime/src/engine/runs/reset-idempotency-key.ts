import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";

/**
 * Frees an idempotency key of a task (idempotencyKeys.reset): the runs holding `key` (as the SDK
 * sent it, usually a hash) give it up, so the next trigger with it makes a new run. The runs keep
 * the key their user gave (`idempotency_key_user`): retrieve still shows it. Returns how many runs
 * held it; none is a 404, as Trigger.dev answers.
 */
export async function resetIdempotencyKey(db: Queryable, environmentId: string, taskIdentifier: string, key: string, now: Date): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE runs SET idempotency_key = NULL, idempotency_key_expires_at = NULL, updated_at = $4
     WHERE environment_id = $1 AND task_identifier = $2 AND idempotency_key = $3`,
    [environmentId, taskIdentifier, key, now],
  );
  if (!rowCount) throw new NotFoundError(`No runs found with idempotency key: ${key} and task: ${taskIdentifier}`);
  return rowCount;
}
