import { dueAt } from "../timers/due-times.ts";
import type { DueWork } from "../timers/due-work.ts";

/**
 * Packet rows whose upload URL expired before any upload: nothing can reference them (a trigger
 * refuses a packet that was never uploaded), so they are deleted, a batch at a time, instead of
 * piling up. Uploaded packets stay as long as their environment.
 */
export const expiredUploads: DueWork = {
  name: "expired-uploads",
  async fire(deps, now, limit) {
    const { rowCount } = await deps.db.query(
      `DELETE FROM packets WHERE (environment_id, path) IN (
         SELECT environment_id, path FROM packets WHERE data IS NULL AND upload_expires_at <= $1
         LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [now, limit],
    );
    return rowCount ?? 0;
  },
  ...dueAt(`SELECT min(upload_expires_at) AS at FROM packets WHERE data IS NULL`),
};
