import { createHash } from "node:crypto";
import { PgBoss } from "pg-boss";

export const BOSS_SCHEMA = "pgboss";

export interface BossOptions {
  connectionString: string;
  /** Workers supervise (heartbeat expiry, retries); API processes only insert. */
  supervise: boolean;
  max?: number;
  /** Told of pg-boss's background errors (its maintenance loops, a connection that dropped). */
  onError?: (error: Error) => void;
}

/**
 * A pg-boss instance configured for svc. Supervision runs every 2 s so a job whose worker died
 * (no heartbeat for 10 s) is retried within about 12 s, not pg-boss's 15-minute expiry.
 *
 * pg-boss's own tables stay small: svc deletes each job as soon as it handled it (consumer.ts),
 * so the job table holds queued and active jobs, and the few that pg-boss ends itself (failed
 * after their retries, cancelled, expired), which its maintenance deletes an hour after they
 * ended (the queues' deleteAfterSeconds, dispatcher.ts). Maintenance runs hourly rather than
 * pg-boss's daily default, so those go within two hours: each pass is one DELETE per queue table
 * that reads every job of the queues it maintains (pg-boss has no index on completed_on), which
 * hourly stays cheap even behind a backlog. One supervising instance per interval runs it (pg-boss
 * claims it in its queue table); API processes never do. Warnings and queue statistics are not
 * stored (persistWarnings and persistQueueStats stay off).
 */
export async function startBoss(options: BossOptions): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: options.connectionString,
    schema: BOSS_SCHEMA,
    max: options.max ?? 10,
    supervise: options.supervise,
    superviseIntervalSeconds: 2,
    monitorIntervalSeconds: 2,
    maintenanceIntervalSeconds: 3600,
    schedule: false,
    migrate: true,
    useListenNotify: false,
  });
  // Without a listener, an `error` event (a lost connection in pg-boss's own pool) is thrown.
  boss.on("error", options.onError ?? (() => {}));
  boss.on("warning", () => {});
  await boss.start();
  return boss;
}

/**
 * The channel pg-boss NOTIFYs (payload: queue name) when a job becomes ready on a notify queue.
 * pg-boss 12 derives it in SQL as 'pgboss_' || left(encode(sha224(schema), 'hex'), 24) (its
 * notifyChannelSql, not part of its public API); computed here the same way so svc imports no
 * pg-boss internals. test/notify-channel.test.ts fails if a pg-boss upgrade changes the derivation.
 */
export const BOSS_NOTIFY_CHANNEL = `pgboss_${createHash("sha224").update(BOSS_SCHEMA).digest("hex").slice(0, 24)}`;
