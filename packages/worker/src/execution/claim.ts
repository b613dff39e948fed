import {
  CLAIM_FAST_RESUME_SQL, CLAIM_FAST_RESUMES_SQL, CLAIM_LIMITED_SQL, CLAIM_READY_SQL, CLAIMED_COLUMNS, GATE_QUEUE_LOCKS_SQL, LIMITED_QUEUE_LOCK_SQL, NAMED_LIMITS_LOCK_SQL, RATE_MARK_DELAYED_SQL, RATE_NEXT_DUE_SQL, RETURN_CLAIMED,
  SELECT_CLAIMED_WITH_LEDGER, prepared, ledgerEntryFromRow, withTransaction, type ClaimedRun, type LedgerEntry, type LedgerRow, type Pool, type Queryable,
} from "@svc/runtime/engine";

export { CLAIMED_COLUMNS, RETURN_CLAIMED, SELECT_CLAIMED_WITH_LEDGER, type ClaimedRun };

export interface Claim {
  run: ClaimedRun;
  /** The run's status before this claim: EXECUTING means its previous worker died (a crash). */
  previousStatus: string;
  /**
   * A start's TTL and start time before this claim (which clears the one and may set the other):
   * a run handed back to the queue gets them back, as if it had never been claimed.
   */
  beforeStart?: { expireAt: Date | null; startedAt: Date | null };
  /** The entries the execution replays, loaded by the claim statement itself. */
  ledger: LedgerEntry[];
  /**
   * The run's ledger_version that `ledger` is the ledger at (migration 0027), read with it; null
   * when not known. The execution's suspension then tells whether its copy can be kept (LedgerCache).
   */
  ledgerVersion: number | null;
  /**
   * Where `ledger` came from: read by the claim statement, carried whole by a resume offer, or
   * this worker's copy from when it suspended the run plus the entries the offer resolved.
   */
  ledgerFrom: "claim" | "offer" | "cache";
}

/** What a claim statement returns besides the run: SELECT_CLAIMED_WITH_LEDGER's ledger columns. */
type LedgerColumns = { ledger: LedgerRow[] | null; ledger_version: number | null };

/**
 * Renews the leases of the executions this worker holds (found by run id, fenced by claim
 * token), offered ones included: an offer is a claim with this worker's lease.
 */
export async function renewLeases(db: Queryable, executions: { runId: string; claimToken: string }[], now: Date, leaseMs: number): Promise<void> {
  if (executions.length === 0) return;
  await db.query(
    `UPDATE runs SET lease_expires_at = $3::timestamptz + make_interval(secs => $4::double precision / 1000)
     WHERE id = ANY($1::text[]) AND claim_token = ANY($2::text[]) AND status = 'EXECUTING'`,
    [executions.map((e) => e.runId), executions.map((e) => e.claimToken), now, leaseMs],
  );
}

/**
 * The resume fast path: claims WAITING runs a NOTIFY named, with a lease, clears their resume mark and loads their ledgers, in one statement. Several runs at once
 * (one NOTIFY can name 100) take only the rows no other worker is claiming (SKIP LOCKED, so
 * workers hearing the same NOTIFY never wait on or deadlock with each other). Results are in
 * input order. Only runs whose resume is due (`resume_due_at`, set by the completion) are
 * taken: a late NOTIFY for a run that was resumed another way and waits again does nothing. Only
 * runs of the worker's own tasks are taken: in an environment whose workers have different tasks,
 * the one that can run it takes it. Run it on a connection with synchronous_commit off (see
 * `claimPool`).
 */
export async function claimFastResumes(db: Queryable, inputs: { runId: string; claimToken: string }[], worker: { id: string; version: string; tasks: string[] }, now: Date, leaseMs: number): Promise<(Claim | null)[]> {
  const values = [inputs.map((i) => i.runId), inputs.map((i) => i.claimToken), worker.id, worker.version, now, leaseMs, worker.tasks];
  const { rows } = await db.query<ClaimedRun & LedgerColumns>(
    inputs.length === 1
      ? // One run (the common case) is a plain guarded update: half the cost of the batch form.
        prepared(
          "svc_claim_fast_resume",
          CLAIM_FAST_RESUME_SQL,
          values,
        )
      : prepared(
          "svc_claim_fast_resumes",
          CLAIM_FAST_RESUMES_SQL,
          values,
        ),
  );
  const byToken = new Map(rows.map((row) => [row.claim_token, row]));
  return inputs.map((input) => {
    const row = byToken.get(input.claimToken);
    if (!row) return null;
    const { ledger, ledger_version, ...run } = row;
    return { run, previousStatus: "WAITING", ledger: (ledger ?? []).map(ledgerEntryFromRow), ledgerVersion: ledger_version, ledgerFrom: "claim" };
  });
}

type ReadyClaimRow = ClaimedRun & LedgerColumns & { previous_status: string };

function readyClaimOf({ ledger, ledger_version, previous_status, ...run }: ReadyClaimRow): Claim {
  return {
    run,
    previousStatus: previous_status,
    // Claimed with its TTL cleared, as any start: a run that is never handed back needs none.
    beforeStart: { expireAt: null, startedAt: null },
    ledger: (ledger ?? []).map(ledgerEntryFromRow),
    ledgerVersion: ledger_version,
    ledgerFrom: "claim",
  };
}

/** Who claims, and for which tasks. */
export interface Claimer {
  id: string;
  version: string;
  environmentId: string;
  tasks: string[];
}

/**
 * The session settings of the connections claims run on (the worker's `claimPool`).
 * `synchronous_commit` off: a claim lost with the WAL is a run still ready, claimed again.
 * `plan_cache_mode` generic: a claim's plan must not depend on what the statistics say of its
 * tasks. A custom plan (Postgres's choice for a prepared statement's first five calls, and later
 * whenever it looks cheaper) reads a task the statistics have not seen (a new task, or one that grew
 * since the last ANALYZE, which autovacuum does after 10 % of a large `runs` changed) as having no
 * runs, and picks runs_task_list: every version of every run the task ever had, fetched and
 * filtered, for each such call. The generic plan reads the claim's partial indexes whatever the
 * task (so the set_config of LIMITED_QUEUE_LOCK_SQL is needed only on other connections).
 */
export const CLAIM_CONNECTION_SETTINGS = { synchronous_commit: "off", plan_cache_mode: "force_generic_plan" } as const;

/**
 * Claims up to `limit` runs of this worker's tasks in queues without a concurrencyLimit straight
 * from `runs` (CLAIM_READY_SQL): due resumes first, then due starts, oldest first, each with a lease
 * of `leaseMs`. Run it on a connection with CLAIM_CONNECTION_SETTINGS (`claimPool`).
 */
export async function claimReady(db: Queryable, worker: Claimer, limit: number, now: Date, leaseMs: number): Promise<Claim[]> {
  const { rows } = await db.query<ReadyClaimRow>(prepared(
    "svc_claim_ready",
    CLAIM_READY_SQL,
    [worker.environmentId, worker.tasks, limit, worker.id, worker.version, now, leaseMs],
  ));
  return rows.map(readyClaimOf);
}

/**
 * Claims up to `limit` ready runs of the limited queue `queue` (CLAIM_LIMITED_SQL), as many as its
 * concurrencyLimit leaves free, under the queue's lock (LIMITED_QUEUE_LOCK_SQL): claims of one
 * queue by any number of workers take turns, each counting the ones before it. With `named` (the
 * queue has runs that hold named concurrency limits) the claim also takes NAMED_LIMITS_LOCK_SQL,
 * after the queue's, and takes those runs too, within their limits. With `gated` (the queue has
 * runs with gates) it takes the locks of its queue and of its ready runs' gate queues, in name order
 * (GATE_QUEUE_LOCKS_SQL), instead of its queue's alone, and takes those runs too, within their gates.
 */
export async function claimLimited(pool: Pool, worker: Claimer, queue: string, limit: number, now: Date, leaseMs: number, options: LimitedClaimOptions = {}): Promise<Claim[]> {
  return (await claimLimitedQueue(pool, worker, queue, limit, now, leaseMs, false, options)).claims;
}

/** Which runs besides its queue's plain ones a limited claim takes, and so which locks it holds. */
export interface LimitedClaimOptions {
  /** Runs holding named concurrency limits (NAMED_LIMITS_LOCK_SQL). */
  named?: boolean;
  /** Runs with gates (GATE_QUEUE_LOCKS_SQL). */
  gated?: boolean;
}

/**
 * Of a rate-limited queue's ready starts after a claim: how many wait for their rate, when the
 * first may start (null: none waits), and how many of them this claim was the first to hold back.
 */
export interface RateWait {
  dueAt: Date | null;
  waiting: number;
  newlyDelayed: number;
}

/**
 * claimLimited for a queue with a rateLimit: when the claim took fewer runs than `limit`, it also
 * reads, in the same transaction (RATE_NEXT_DUE_SQL), whether runs are left waiting for their
 * rate and when the first one's slot is due; `rate` is null when the claim filled `limit`.
 */
export async function claimRateLimited(pool: Pool, worker: Claimer, queue: string, limit: number, now: Date, leaseMs: number, options: LimitedClaimOptions = {}): Promise<{ claims: Claim[]; rate: RateWait | null }> {
  return claimLimitedQueue(pool, worker, queue, limit, now, leaseMs, true, options);
}

/** No queue's lock but the claim's own: gated runs are left out. */
const NO_GATE_LOCKS: string[] = [];

async function claimLimitedQueue(pool: Pool, worker: Claimer, queue: string, limit: number, now: Date, leaseMs: number, rated: boolean, options: LimitedClaimOptions): Promise<{ claims: Claim[]; rate: RateWait | null }> {
  const named = options.named ?? false;
  return withTransaction(pool, async (tx) => {
    // Queue locks first (the gated claim's in name order), the named limits' lock last: no two
    // claims wait on each other crosswise (GATE_QUEUE_LOCKS_SQL).
    let locked = NO_GATE_LOCKS;
    if (options.gated) {
      const { rows } = await tx.query<{ queues: string[] }>(prepared("svc_gate_queue_locks", GATE_QUEUE_LOCKS_SQL, [worker.environmentId, queue, worker.tasks]));
      locked = rows[0]?.queues ?? NO_GATE_LOCKS;
    } else {
      await tx.query(prepared("svc_limited_queue_lock", LIMITED_QUEUE_LOCK_SQL, [worker.environmentId, queue]));
    }
    if (named) await tx.query(prepared("svc_named_limits_lock", NAMED_LIMITS_LOCK_SQL, [worker.environmentId]));
    const { rows } = await tx.query<ReadyClaimRow>(prepared(
      "svc_claim_limited",
      CLAIM_LIMITED_SQL,
      [worker.environmentId, queue, worker.tasks, limit, worker.id, worker.version, now, leaseMs, named, locked],
    ));
    const claims = rows.map(readyClaimOf);
    if (!rated || claims.length >= limit) return { claims, rate: null };
    const due = await tx.query<{ due_at: Date | null; waiting: number }>(prepared("svc_rate_next_due", RATE_NEXT_DUE_SQL, [worker.environmentId, queue, worker.tasks, now]));
    const row = due.rows[0];
    const waiting = row?.waiting ?? 0;
    let newlyDelayed = 0;
    if (waiting > 0) {
      const marked = await tx.query<{ marked: number }>(prepared("svc_rate_mark_delayed", RATE_MARK_DELAYED_SQL, [worker.environmentId, queue, worker.tasks, now]));
      newlyDelayed = marked.rows[0]?.marked ?? 0;
    }
    return { claims, rate: { dueAt: row?.due_at ?? null, waiting, newlyDelayed } };
  });
}
