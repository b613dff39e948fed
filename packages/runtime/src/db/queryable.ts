import { createHash } from "node:crypto";
import pg from "pg";

/**
 * The one database seam: anything that can run a parameterised statement.
 * A `pg.Pool`, a checked-out `pg.PoolClient` and a caller's own transaction client all fit,
 * so every store function can join the caller's transaction.
 */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  /** A named statement: parsed and planned once per connection (hot paths use `prepared`). */
  query<R extends pg.QueryResultRow = any>(config: { name: string; text: string; values?: unknown[] }): Promise<pg.QueryResult<R>>;
}

/**
 * A hot statement as a named prepared statement: after the first use on a connection only its
 * parameters travel, and Postgres skips parsing and planning.
 */
export function prepared(name: string, text: string, values: unknown[]): { name: string; text: string; values: unknown[] } {
  return { name, text, values };
}

const autoNames = new Map<string, string>();

/**
 * Like `prepared`, named after a hash of the text: for constant SQL on hot paths, planned once
 * per connection.
 */
export function preparedText(text: string, values: unknown[] = []): { name: string; text: string; values: unknown[] } {
  let name = autoNames.get(text);
  if (!name) autoNames.set(text, (name = `svc_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`));
  return { name, text, values };
}

/** Whether `error` is Postgres's unique violation (23505) on the named index or constraint. */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  return (error as { code?: string; constraint?: string })?.code === "23505" && (error as { constraint?: string }).constraint === constraint;
}

/**
 * Waits until everything committed so far is on disk: a transaction that writes a little WAL (a
 * counter in wal_flush_marks, one row per backend slot so concurrent calls rarely meet) and
 * commits synchronously, which flushes the WAL up to its commit record and so every record before
 * it. Postgres skips the flush for a transaction that wrote no WAL: taking a transaction id alone
 * is not enough. Pairs with a commit made with synchronous_commit off.
 */
export async function flushWal(db: Queryable): Promise<void> {
  await db.query(prepared(
    "svc_flush_wal",
    `INSERT INTO wal_flush_marks (slot) VALUES (pg_backend_pid() % 1024)
     ON CONFLICT (slot) DO UPDATE SET flushes = wal_flush_marks.flushes + 1`,
    [],
  ));
}

/** Whether `db` is a pool: each statement on it is its own transaction. */
export function isPool(db: Queryable): db is pg.Pool {
  return db instanceof pg.Pool;
}

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

// Timestamps come back as JS Dates; bigint counts as numbers (our counters stay far below 2^53).
pg.types.setTypeParser(20, (v) => Number(v));

export interface PoolOptions {
  max?: number;
  applicationName?: string;
  /** Session settings for every connection (e.g. `{ synchronous_commit: "off" }`), sent at connect time, besides DEFAULT_SETTINGS. */
  settings?: Record<string, string>;
  /** How long to wait for a connection (a new one, or a free one of a full pool) before failing: a host that drops packets must not hold requests for minutes. @default 10000 */
  connectTimeoutMs?: number;
  /**
   * Told of every error a connection emits outside a statement (the server went away, the network
   * dropped). Required: each pool's owner decides where such errors are reported.
   */
  onError: (error: Error) => void;
}

/**
 * Settings of every svc connection. `jit`: off. svc's statements are short and run over and over;
 * Postgres JIT-compiles any statement whose plan costs more than jit_above_cost (100,000 by
 * default), on every execution, and a generic plan's estimate grows with the table: a limited
 * queue's claim 10,000 runs deep cost 339 ms a call, nearly all of it compiling 647 functions for
 * a statement that runs in under 4 ms; a first retention sweep over a freshly loaded history ~1 s
 * per batch that runs in ~30 ms; a run list 15–55 ms more.
 */
const DEFAULT_SETTINGS: Record<string, string> = { jit: "off" };

/**
 * A connection pool whose connections never crash the process. node-postgres emits `error` on a
 * client whose connection ends unexpectedly (a Postgres restart), whether it is idle in the pool
 * or checked out by a transaction; pg-pool only listens while it is idle, and an `error` event
 * nobody listens to is thrown. Every client therefore gets a listener of its own for its whole
 * life: the statement in flight fails with the error anyway, and the pool discards the broken
 * client when it is released.
 */
export function createPool(connectionString: string, options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    idleTimeoutMillis: 0,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    application_name: options.applicationName ?? "svc",
    options: Object.entries({ ...DEFAULT_SETTINGS, ...options.settings }).map(([k, v]) => `-c ${k}=${v}`).join(" "),
  });
  const onError = options.onError;
  pool.on("connect", (client) => client.on("error", onError));
  // An idle client's error reaches the pool too (the client's own listener has reported it).
  pool.on("error", () => {});
  return pool;
}

/**
 * Whether `error` is a lock conflict Postgres resolved by aborting this transaction: a deadlock
 * (40P01) or a serialization failure (40001). Nothing of the transaction was written; running it
 * again is the cure.
 */
export function isLockConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "40P01" || code === "40001";
}

/** How many times a transaction aborted by a lock conflict is run (the first run included). */
const CONFLICT_ATTEMPTS = 5;

/**
 * Runs `work` (one whole transaction or autocommit statement) again when Postgres aborted it to
 * break a deadlock. Two transactions that lock the same rows in opposite orders (a cancel
 * walking a run tree down while a child's ending walks it up) cannot both win; the loser must
 * not turn into an error for its caller or a lost write. Only for work that has no effect outside
 * the database before it commits.
 */
export async function retryOnConflict<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isLockConflict(error) || attempt >= CONFLICT_ATTEMPTS) throw error;
      // A little jitter, so that the two sides of the conflict do not meet again in step.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}

export interface TransactionOptions {
  /**
   * Commit without waiting for the WAL flush (synchronous_commit off for this transaction only):
   * its effects are visible and its NOTIFYs delivered at once. Only for a caller that makes the
   * commit durable itself before anyone relies on it (see flushWal), or whose work a later
   * synchronous commit covers.
   */
  asyncCommit?: boolean;
}

/**
 * Runs `fn` inside BEGIN/COMMIT on one client; rolls back when it throws. A transaction aborted by
 * a deadlock is run again from the start (see retryOnConflict), so `fn` must have no effect
 * outside the database before it returns.
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (tx: pg.PoolClient) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
  return retryOnConflict(() => transactionOnce(pool, fn, options));
}

async function transactionOnce<T>(pool: pg.Pool, fn: (tx: pg.PoolClient) => Promise<T>, options: TransactionOptions): Promise<T> {
  const client = await pool.connect();
  try {
    // One round trip either way: the simple protocol runs both statements of the string.
    await client.query(options.asyncCommit ? "BEGIN; SET LOCAL synchronous_commit = off" : "BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
