import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError, ValidationError } from "../../errors.ts";
import type { PacketRow } from "./store.ts";
import { packetDownloadUrl } from "./urls.ts";

export const RUN_PACKET_FIELDS = ["payload", "output"] as const;
export type RunPacketField = (typeof RUN_PACKET_FIELDS)[number];

/**
 * A download URL for a run's payload or output stored as a packet (GET /api/v1/runs/{id}/packets/{field}),
 * authorized by the run rather than by the packet's path: what a public token that may read the
 * run uses (realtime subscribers fetch large payloads this way). NotFoundError when the run is not
 * in the environment, or that field is not a stored packet (inline, absent, not uploaded).
 */
export async function runPacketUrl(deps: { db: Queryable; apiUrl: string; now: Date }, environmentId: string, runId: string, field: RunPacketField): Promise<string> {
  // `field` names a column below: only the two it may be.
  if (!RUN_PACKET_FIELDS.includes(field)) throw new ValidationError(`field: expected payload or output, got ${JSON.stringify(field)}`);
  const { rows } = await deps.db.query<{ found: boolean; packet: Pick<PacketRow, "environment_id" | "path" | "upload_token"> | null }>(
    // The packet is looked up by the path the run stores, in the run's environment; the bytes stay in the table.
    `SELECT true AS found, (SELECT json_build_object('environment_id', p.environment_id, 'path', p.path, 'upload_token', p.upload_token)
                            FROM packets p WHERE p.environment_id = r.environment_id AND p.path = r.${field} AND p.data IS NOT NULL) AS packet
     FROM runs r WHERE r.id = $1 AND r.environment_id = $2 AND r.${field}_type = 'application/store'`,
    [runId, environmentId],
  );
  const packet = rows[0]?.packet;
  if (!packet) throw new NotFoundError(rows[0] ? `The run's ${field} packet was never uploaded` : `Run not found, or its ${field} is not stored as a packet`);
  return packetDownloadUrl(deps.apiUrl, packet, deps.now);
}
