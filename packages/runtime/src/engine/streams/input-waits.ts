import { withTransaction, type Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import { CHANNELS } from "../channels.ts";
import type { EngineDeps } from "../deps.ts";
import { createTokenInTransaction, type CreateTokenInput } from "../waitpoints/create-token.ts";

/** What an input wait's waitpoint completes with: the chunk's sequence number and value, `{ seq, data }`. */
export interface InputChunk {
  seq: number;
  data: unknown;
}

/**
 * Attaches a WAITING MANUAL waitpoint to a run's input stream `key`, in `tx`: under the stream
 * row's lock (made here when the stream has no chunk yet), so that no chunk slips between the
 * look and the wait. When a chunk after `afterSeq` is already there the waitpoint is completed
 * with the first one (`{ seq, data }`) and the run does not suspend; else a run_input_waits row
 * lets the next chunk sent complete it (svc_append_run_stream_records). Returns whether it
 * completed here.
 */
export async function attachInputWait(
  deps: Pick<EngineDeps, "clock">,
  tx: Queryable,
  input: { environmentId: string; runId: string; key: string; waitpointId: string; afterSeq: number },
): Promise<{ arrived: boolean }> {
  const now = deps.clock.now();
  await tx.query(
    `INSERT INTO run_streams (environment_id, run_id, io, stream_key, created_at) VALUES ($1, $2, 'in', $3, $4) ON CONFLICT DO NOTHING`,
    [input.environmentId, input.runId, input.key, now],
  );
  await tx.query(`SELECT 1 FROM run_streams WHERE run_id = $1 AND io = 'in' AND stream_key = $2 FOR UPDATE`, [input.runId, input.key]);
  const { rows } = await tx.query<{ seq: string; data: string }>(
    `SELECT seq, data FROM run_stream_records WHERE run_id = $1 AND io = 'in' AND stream_key = $2 AND seq > $3 ORDER BY seq LIMIT 1`,
    [input.runId, input.key, input.afterSeq],
  );
  const chunk = rows[0];
  if (chunk) {
    await tx.query(
      `UPDATE waitpoints SET status = 'COMPLETED', completed_at = $2, output = $3, output_type = 'application/json', output_is_error = false
       WHERE id = $1 AND status = 'WAITING'`,
      [input.waitpointId, now, `{"seq":${chunk.seq},"data":${chunk.data}}`],
    );
    return { arrived: true };
  }
  await tx.query(`INSERT INTO run_input_waits (waitpoint_id, environment_id, run_id, stream_key, after_seq) VALUES ($1, $2, $3, $4, $5)`, [
    input.waitpointId,
    input.environmentId,
    input.runId,
    input.key,
    input.afterSeq,
  ]);
  return { arrived: false };
}

/**
 * The waitpoint of a run's `streams.input(key).wait()`, made in the transaction that records the
 * wait: a MANUAL waitpoint (its timeout, if any, ends the wait with ok: false) attached to the
 * stream (attachInputWait).
 */
export async function makeInputWaitpoint(
  deps: Pick<EngineDeps, "clock">,
  tx: Queryable,
  input: { environmentId: string; runId: string; key: string; afterSeq: number; timeoutAt: Date | null },
): Promise<string> {
  const id = newId.waitpoint();
  await tx.query(`INSERT INTO waitpoints (id, environment_id, type, status, timeout_at, tags, created_at) VALUES ($1, $2, 'MANUAL', 'WAITING', $3, '{}', $4)`, [
    id,
    input.environmentId,
    input.timeoutAt,
    deps.clock.now(),
  ]);
  const { arrived } = await attachInputWait(deps, tx, { ...input, waitpointId: id });
  if (!arrived && input.timeoutAt) await tx.query(`SELECT pg_notify($1, $2)`, [CHANNELS.timers, input.timeoutAt.toISOString()]);
  return id;
}

/**
 * POST /api/v1/runs/{run}/input-streams/wait (the SDK's createInputStreamWaitpoint): a token that
 * completes with the run's next input chunk after `lastSeqNum` (from the start without it), with
 * the token options (timeout, idempotency key, tags). A cached token (same idempotency key) is
 * returned as it is.
 */
export async function createInputStreamWaitpoint(
  deps: Pick<EngineDeps, "clock" | "db">,
  environmentId: string,
  runId: string,
  input: CreateTokenInput & { streamId: string; lastSeqNum?: number },
): Promise<{ waitpointId: string; isCached: boolean }> {
  return withTransaction(deps.db, async (tx) => {
    const { rows } = await tx.query(`SELECT 1 FROM runs WHERE id = $1 AND environment_id = $2`, [runId, environmentId]);
    if (rows.length === 0) throw new NotFoundError("Run not found");
    const token = await createTokenInTransaction(deps, tx, environmentId, input);
    if (!token.isCached) await attachInputWait(deps, tx, { environmentId, runId, key: input.streamId, waitpointId: token.waitpoint.id, afterSeq: input.lastSeqNum ?? 0 });
    return { waitpointId: token.waitpoint.id, isCached: token.isCached };
  });
}
