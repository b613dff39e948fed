import type { PgBoss } from "pg-boss";
import type { Dispatcher, RunJob } from "@svc/runtime/engine";
import { preparedText, type Queryable } from "@svc/runtime/db";
import { resumeQueueName, runsQueueName, startQueueName } from "./names.ts";
import { insertWithWakeUp, wakeWorkers, type InsertedJobs } from "./wake-workers.ts";

/** Heartbeats are required: a job whose worker stops touching it for this long is retried. */
export const HEARTBEAT_SECONDS = 10;

/**
 * How long pg-boss keeps a job it ended itself (failed after its retries, cancelled; svc deletes
 * the jobs it handles at once): svc never reads an ended job (the run's row says how it ended), so
 * an hour, for an operator looking into pg-boss's tables. pg-boss deletes them in its maintenance
 * pass (startBoss: hourly).
 */
export const ENDED_JOB_SECONDS = 3600;

/**
 * How long pg-boss may keep a job queued (created or retry) before it deletes it: pg-boss's default
 * of 14 days would delete the start job of a run that waits longer for a slot of its queue, and
 * that run would stay QUEUED with no job to start it. svc ends queued runs itself (their TTL makes
 * them EXPIRED; a cancel, CANCELED), and the job then finds the run final, so pg-boss should never
 * delete one first: 10 years, in effect never.
 */
export const QUEUED_JOB_SECONDS = 10 * 365 * 86_400;

/**
 * Enqueues run jobs with pg-boss inside the caller's transaction (starts that workers claim from
 * `runs` get no job, only the wake-up) (`insert(…, { db })`), so a job
 * exists if and only if the state change that needs it commits, and wakes the workers that should
 * fetch them (wakeWorkers: one with a free slot for a few jobs, not every worker).
 */
export class PgBossDispatcher implements Dispatcher {
  readonly #boss: PgBoss;
  readonly #known = new Set<string>();

  constructor(boss: PgBoss) {
    this.#boss = boss;
  }

  /** Creates the pg-boss queue once per process; createQueue is idempotent across processes. */
  async ensureQueue(name: string): Promise<void> {
    if (this.#known.has(name)) return;
    const existing = await this.#boss.getQueue(name);
    // Queues made before wakeWorkers had pg-boss's NOTIFY on (which woke every worker), and queues
    // made before QUEUED_JOB_SECONDS had pg-boss's 14 days.
    if (existing && (existing.notify || existing.retentionSeconds !== QUEUED_JOB_SECONDS || existing.deleteAfterSeconds !== ENDED_JOB_SECONDS)) {
      await this.#boss.updateQueue(name, { notify: false, retentionSeconds: QUEUED_JOB_SECONDS, deleteAfterSeconds: ENDED_JOB_SECONDS });
    }
    await this.#boss.createQueue(name, {
      // No pg-boss NOTIFY (it would wake every worker): dispatch() wakes the workers that should
      // fetch. Resume jobs exist only for resumes the svc NOTIFY fast path missed, so the two
      // never race for one resume.
      notify: false,
      heartbeatSeconds: HEARTBEAT_SECONDS,
      // Redeliveries after a dead worker; the engine bounds real attempts by maxAttempts.
      retryLimit: 1000,
      retryDelay: 0,
      // pg-boss caps expiry at 24 h; liveness comes from heartbeats, this is only a ceiling.
      expireInSeconds: 86_400,
      retentionSeconds: QUEUED_JOB_SECONDS,
      deleteAfterSeconds: ENDED_JOB_SECONDS,
    });
    this.#known.add(name);
  }

  async dispatch(tx: Queryable, jobs: RunJob[], now: Date): Promise<void> {
    const byQueue = new Map<string, { environmentId: string; rows: object[] }>();
    // Starts that workers claim from `runs`: no job, a wake-up of the workers of their queue.
    const inTable = new Map<string, InsertedJobs>();
    for (const job of jobs) {
      if (job.inTable && job.kind === "start") {
        const queue = runsQueueName(job.environmentId, job.queueName);
        const entry = inTable.get(queue) ?? { environmentId: job.environmentId, queue, count: 0 };
        entry.count++;
        inTable.set(queue, entry);
        continue;
      }
      // A resumed run of a queue with a concurrencyLimit must take a slot of that queue like a
      // start does: its resume job goes to the queue's own pg-boss queue (where group concurrency
      // counts it); the fast path leaves such runs alone.
      const throughQueue = job.kind === "start" || job.throughQueue === true;
      const name = throughQueue ? startQueueName(job.environmentId, job.queueName) : resumeQueueName(job.environmentId);
      const concurrencyKey = job.concurrencyKey;
      let entry = byQueue.get(name);
      if (!entry) byQueue.set(name, (entry = { environmentId: job.environmentId, rows: [] }));
      entry.rows.push({
        data: { runId: job.runId, kind: job.kind },
        // Every job carries a group so a queue's concurrencyLimit (and per-key limits) can be
        // enforced by pg-boss's global group concurrency at fetch time.
        group: { id: concurrencyKey ? `k:${concurrencyKey}` : "default" },
      });
    }
    const inserted: InsertedJobs[] = [...byQueue].map(([queue, { environmentId, rows }]) => ({ environmentId, queue, count: rows.length }));
    inserted.push(...inTable.values());
    let woken = false;
    let remaining = byQueue.size;
    for (const [name, { rows }] of byQueue) {
      await this.ensureQueue(name);
      const last = --remaining === 0;
      // pg-boss's insert statement is constant text: run it prepared on our connection; the last
      // one carries the wake-up of all (its NOTIFYs go out at the commit either way).
      const db = {
        executeSql: (text: string, values: unknown[] = []) => {
          const folded = last ? insertWithWakeUp(text, values, inserted, now) : null;
          if (folded) woken = true;
          return tx.query(preparedText(folded?.text ?? text, folded?.values ?? values));
        },
      };
      await this.#boss.insert(name, rows, { db });
    }
    if (!woken) await wakeWorkers(tx, inserted, now);
  }
}
