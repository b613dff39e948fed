import type { Queryable } from "../../db/queryable.ts";
import { keysetTimeSql, type Keyset } from "./keyset.ts";

export interface PacketBatchInput {
  environmentId: string;
  cutoff: Date;
  after: Keyset;
  limit: number;
}

/**
 * Looks at the next `limit` uploaded packets of the environment created before the cutoff
 * (packets_created, in creation order) and deletes those whose every upload and upload URL is older
 * than the cutoff and whose path no run's payload names any more (runs_stored_payload): the
 * payloads of deleted runs, and uploads no trigger ever used. A replay reuses its run's packet, so
 * a packet goes with the last run that names it.
 *
 * Call it in a transaction: two statements, on purpose. The first locks the candidates (SKIP LOCKED), the
 * second looks for runs naming them with a snapshot taken after those locks. A trigger naming a
 * packet holds it FOR KEY SHARE until it commits (assertPacketUploaded): either the first
 * statement skips the packet, or the trigger committed before the lock was granted and the second
 * statement sees its run, or the trigger waits for this transaction and then finds no packet.
 */
export async function deletePacketBatch(tx: Queryable, input: PacketBatchInput): Promise<{ examined: number; packets: number; next: Keyset | null }> {
  const { rows } = await tx.query<{ path: string; at: string; old: boolean }>(
    `SELECT path, ${keysetTimeSql("created_at")} AS at,
            upload_expires_at < $2 AND (uploaded_at IS NULL OR uploaded_at < $2) AS old
       FROM packets
      WHERE environment_id = $1 AND data IS NOT NULL AND created_at < $2 AND (created_at, path) > ($3::timestamptz, $4::text)
      ORDER BY created_at, path LIMIT $5`,
    [input.environmentId, input.cutoff, input.after.at, input.after.id, input.limit],
  );
  const last = rows.at(-1);
  const next = rows.length === input.limit && last ? { at: last.at, id: last.path } : null;
  const old = rows.filter((r) => r.old).map((r) => r.path);
  if (old.length === 0) return { examined: rows.length, packets: 0, next };
  const { rows: locked } = await tx.query<{ path: string }>(
    `SELECT path FROM packets WHERE environment_id = $1 AND path = ANY($2::text[]) FOR UPDATE SKIP LOCKED`,
    [input.environmentId, old],
  );
  if (locked.length === 0) return { examined: rows.length, packets: 0, next };
  const { rowCount } = await tx.query(
    `DELETE FROM packets p WHERE p.environment_id = $1 AND p.path = ANY($2::text[])
       AND NOT EXISTS (
         SELECT 1 FROM runs r WHERE r.environment_id = p.environment_id AND r.payload_type = 'application/store'
           AND md5(r.payload) = md5(p.path) AND r.payload = p.path)`,
    [input.environmentId, locked.map((r) => r.path)],
  );
  return { examined: rows.length, packets: rowCount ?? 0, next };
}
