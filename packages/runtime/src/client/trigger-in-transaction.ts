// Triggering inside the caller's own database transaction: `tasks.trigger(…, { tx })` and
// `tasks.batchTrigger(…, { tx })` call svc_trigger / svc_batch_trigger (packages/runtime/sql/functions)
// on the caller's `pg` client instead of the HTTP API. The run exists if and only if that
// transaction commits; workers hear of it at commit. docs/trigger-in-transaction.md.
import { AuthenticationError, BadRequestError } from "./errors.ts";
import type { HttpTransport } from "./http.ts";
import { serializePayload } from "./packets.ts";
import type { TransactionClient, TransactionTriggerOptions } from "./trigger-options.ts";

/**
 * The environment is the one the client's secret key opens, looked up in the same statement
 * (secret_keys holds the key's SHA-256, as the API's authentication reads it).
 */
const TRIGGER_SQL = `SELECT t.run_id, t.is_cached
  FROM (SELECT environment_id FROM secret_keys WHERE key_hash = $1 AND (expires_at IS NULL OR expires_at > now())) k,
       svc_trigger(k.environment_id, $2, $3::jsonb, $4::jsonb) t`;
const BATCH_SQL = `SELECT t.batch_id, t.run_ids, t.is_cached
  FROM (SELECT environment_id FROM secret_keys WHERE key_hash = $1 AND (expires_at IS NULL OR expires_at > now())) k,
       svc_batch_trigger(k.environment_id, $2::jsonb, $3::jsonb) t`;

export async function triggerInTransaction(
  http: HttpTransport,
  tx: TransactionClient,
  taskId: string,
  payload: unknown,
  options: TransactionTriggerOptions,
): Promise<{ id: string; isCached: boolean }> {
  const keyHash = await secretKeyHash(http, "tasks.trigger");
  const serialized = serializePayload(payload);
  const rows = await query<{ run_id: string; is_cached: boolean }>(tx, TRIGGER_SQL, [keyHash, taskId, serialized.payload ?? null, JSON.stringify(sqlOptions(options))]);
  const row = rows[0];
  if (!row) throw unknownKey("tasks.trigger");
  return { id: row.run_id, isCached: row.is_cached };
}

export async function batchTriggerInTransaction(
  http: HttpTransport,
  tx: TransactionClient,
  items: { task: string; payload: unknown; options?: TransactionTriggerOptions }[],
  options: { idempotencyKey?: string },
): Promise<{ batchId: string; runIds: string[]; isCached: boolean }> {
  const keyHash = await secretKeyHash(http, "tasks.batchTrigger");
  const wire = items.map((item) => {
    const serialized = serializePayload(item.payload);
    return { task: item.task, payload: serialized.payload === undefined ? null : JSON.parse(serialized.payload), options: sqlOptions(item.options ?? {}) };
  });
  const batchOptions = options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {};
  const rows = await query<{ batch_id: string; run_ids: string[]; is_cached: boolean }>(tx, BATCH_SQL, [keyHash, JSON.stringify(wire), JSON.stringify(batchOptions)]);
  const row = rows[0];
  if (!row) throw unknownKey("tasks.batchTrigger");
  return { batchId: row.batch_id, runIds: row.run_ids, isCached: row.is_cached };
}

/**
 * Options as svc_trigger reads them: a Date delay as ISO text, `undefined` left out (JSON.stringify
 * drops it), an item's own `tx` (the batch's is the one used) left out.
 */
function sqlOptions(options: TransactionTriggerOptions & { tx?: unknown }): Record<string, unknown> {
  const { delay, concurrency, tx: _, ...rest } = options;
  return { ...rest, delay: delay instanceof Date ? delay.toISOString() : delay, concurrency: typeof concurrency === "string" ? [concurrency] : concurrency };
}

async function secretKeyHash(http: HttpTransport, what: string): Promise<string> {
  const key = http.requireAccessToken(what);
  if (http.config.previewBranch) throw new TypeError(`${what}: { tx } triggers in the secret key's own environment; a preview branch needs the HTTP API`);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function unknownKey(what: string): AuthenticationError {
  return new AuthenticationError(undefined, `${what}: { tx } needs the secret key of an environment in the database it runs on, and the configured credential is none`);
}

/** The statement's rows; svc_trigger's refusals (invalid_parameter_value) as the HTTP API's 400. */
async function query<T>(tx: TransactionClient, text: string, values: unknown[]): Promise<T[]> {
  try {
    return (await tx.query(text, values)).rows as T[];
  } catch (error) {
    if ((error as { code?: string }).code === "22023") {
      const message = (error as Error).message;
      throw new BadRequestError(400, message, { error: message }, undefined, { cause: error });
    }
    throw error;
  }
}
