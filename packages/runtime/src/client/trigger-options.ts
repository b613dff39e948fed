// The options of a trigger, over HTTP or inside the caller's transaction (trigger-in-transaction.ts).

/**
 * A `pg` client inside a transaction the caller opened (`BEGIN` … `COMMIT`), or anything with the
 * same `query`: the trigger is one statement on it, and commits or rolls back with the caller's writes.
 */
export interface TransactionClient {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** Options of one trigger. Every field is optional; the task's own settings apply otherwise. */
export interface TriggerOptions {
  /** The same key within its TTL returns the existing run (`isCached: true`) instead of a new one. */
  idempotencyKey?: string;
  /** Lifetime of the idempotency key: "30s", "10m", "1h", "7d". @default "30d" */
  idempotencyKeyTTL?: string;
  /** Start later: a duration ("1h30m") or a date. The run is DELAYED until then. */
  delay?: string | Date;
  /** Not started within this time (a duration, or seconds) → EXPIRED. */
  ttl?: string | number;
  /** Up to 10 tags, each at most 128 characters. */
  tags?: string | string[];
  metadata?: Record<string, unknown>;
  /** Overrides the task's retry.maxAttempts. */
  maxAttempts?: number;
  /** Seconds of execution before the attempt is stopped. */
  maxDuration?: number;
  /** Queue name (or `{ name }`). @default the task's queue */
  queue?: string | { name: string };
  /** Per-key concurrency inside the queue. */
  concurrencyKey?: string;
  /**
   * Named concurrency limits the run holds (at most two), instead of its task's: the run starts
   * only while each has room. docs/queues-and-concurrency.md#named-concurrency-limits
   */
  concurrency?: string | string[];
  /**
   * svc's extension: the run's rate key, and its own bound. Each key of a queue with a rateLimit
   * has its own copy of the limit; runs without one share one. `limit` with `period`: this run also
   * starts only while its key's starts in the last `period` number fewer than `limit`.
   * docs/rate-limits.md
   */
  rateLimit?: { key?: string; limit?: number; period?: string | number };
  machine?: string;
  priority?: number;
  /** Marks the run as a test run. @default false */
  test?: boolean;
  /** Run on this worker version only. */
  lockToVersion?: string;
  /** The run this one is a child of (set by in-task helpers). */
  parentRunId?: string;
  /**
   * Trigger inside this database transaction (a `pg` client after `BEGIN`) instead of over HTTP: the
   * run exists if and only if the transaction commits, and workers hear of it at commit. Takes the
   * options svc_trigger takes (TransactionTriggerOptions: not machine, priority, lockToVersion, parentRunId); the client's
   * secret key names the environment. docs/trigger-in-transaction.md.
   */
  tx?: TransactionClient;
}

/** What a trigger in a transaction takes of the trigger's options (svc_trigger_run lists them). */
export type TransactionTriggerOptions = Pick<
  TriggerOptions,
  "idempotencyKey" | "idempotencyKeyTTL" | "delay" | "ttl" | "tags" | "metadata" | "maxAttempts" | "maxDuration" | "queue" | "concurrencyKey" | "rateLimit" | "concurrency" | "test"
>;
