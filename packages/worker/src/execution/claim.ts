import {
  CLAIM_FAST_RESUME_SQL, CLAIM_FAST_RESUMES_SQL, CLAIM_QUEUED_SQL, CLAIM_RESUME_SQL, CLAIM_STARTS_SQL, CLAIMED_COLUMNS, RETURN_CLAIMED, SELECT_CLAIMED_WITH_LEDGER,
  claimStartsCtes, prepared, ledgerEntryFromRow, type ClaimedRun, type LedgerEntry, type LedgerRow, type Queryable, type RunRow,
} from "@svc/runtime/engine";
import type { FetchTail } from "@svc/queue";

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


export interface ClaimInput {
  runId: string;
  claimToken: string;
  workerId: string;
  workerVersion: string;
  now: Date;
}

/**
 * Starts new attempts of QUEUED runs, or takes over runs whose previous holder died (pg-boss
 * redelivered the same job after its heartbeat lapsed). The attempt number goes up by one; the
 * ledger epoch does not (a crash loses nothing). Expired TTLs are honoured here too. One statement
 * for the whole batch: claims, attempt bookkeeping and ledger loads. Results are in input order;
 * null where the run could not be claimed (finished, canceled, taken by another job).
 */
export async function claimStarts(db: Queryable, inputs: (ClaimInput & { jobId: string })[], worker: { id: string; version: string }, now: Date): Promise<(Claim | null)[]> {
  const { rows } = await db.query<StartClaimRow>(prepared(
    "svc_claim_starts",
    CLAIM_STARTS_SQL,
    [JSON.stringify(inputs.map((i) => ({ run_id: i.runId, claim_token: i.claimToken, job_id: i.jobId }))), worker.id, worker.version, now],
  ));
  // Matched by claim token: two jobs for one run yield one claim, the other gets null.
  const byToken = new Map(rows.map((row) => [row.claim_token, row]));
  return inputs.map((input) => {
    const row = byToken.get(input.claimToken);
    return row ? startClaimOf(row) : null;
  });
}

type StartClaimRow = ClaimedRun & LedgerColumns & { previous_status: string; previous_expire_at: Date | null; previous_started_at: Date | null };

function startClaimOf(row: StartClaimRow): Claim {
  const { previous_status, previous_expire_at, previous_started_at, ledger, ledger_version, ...run } = row;
  return {
    run,
    previousStatus: previous_status,
    beforeStart: { expireAt: previous_expire_at, startedAt: previous_started_at },
    ledger: (ledger ?? []).map(ledgerEntryFromRow),
    ledgerVersion: ledger_version,
    ledgerFrom: "claim",
  };
}

/**
 * The claim of a start queue's fetched jobs, in the fetch statement itself (JobConsumer's
 * fetchAlso): claimStarts's statement reading the jobs the fetch took, each with a claim token
 * drawn there, so that a fetch and its claims are one statement, not two. A job comes with its
 * claim as JSON (claimFromFetch reads it), or null where its run could not be claimed. If the
 * claim fails (a deadlock, say), the fetch fails with it and the jobs stay queued.
 */
export function startClaimsInFetch(worker: { id: string; version: string }, now: Date): FetchTail {
  return {
    // Through json_to_recordset, whose row estimate (100) is the prepared claim's: read straight
    // from `fetched`, the planner expects one row (the job table's statistics) and joins the CTEs
    // by nested loops, comparing every fetched job with every other three times over (~15 ms of a
    // 200-job fetch's 32, and batched triggers ran at half their speed).
    ctes: (first) => `input AS MATERIALIZED (
         SELECT * FROM json_to_recordset((
           SELECT coalesce(json_agg(json_build_object('run_id', f.data->>'runId', 'claim_token', gen_random_uuid()::text, 'job_id', f.id::text)), '[]')
           FROM fetched f WHERE f.data->>'kind' = 'start'
         )) AS i(run_id text, claim_token text, job_id text)
       ),
       ${claimStartsCtes(`$${first}::text`, `$${first + 1}::text`, `$${first + 2}::timestamptz`)},
       claim_rows AS (
         SELECT * FROM json_to_recordset((
           SELECT coalesce(json_agg(json_build_object('claim_token', c.claim_token, 'claim', row_to_json(c))), '[]') FROM claims c
         )) AS x(claim_token text, claim json)
       )`,
    // Joined once (a subquery per job re-read the claims for every job), and to the claims through
    // json_to_recordset too: `claims` itself is expected to be one row, and joined so it was
    // rescanned for every job.
    joins: `LEFT JOIN input i ON i.job_id = f.id::text LEFT JOIN claim_rows x ON x.claim_token = i.claim_token`,
    column: `x.claim`,
    values: [worker.id, worker.version, now],
  };
}

/** A start claim as startClaimsInFetch returned it with its job (JSON: its times as strings), or null. */
export function claimFromFetch(value: unknown): Claim | null {
  if (value === null || typeof value !== "object") return null;
  const row = value as Record<string, unknown>;
  const at = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));
  return startClaimOf({
    ...(row as unknown as StartClaimRow),
    created_at: at(row.created_at)!,
    updated_at: at(row.updated_at)!,
    previous_expire_at: at(row.previous_expire_at),
    previous_started_at: at(row.previous_started_at),
  });
}

/**
 * Resumes a WAITING run through its pg-boss resume job (a resume the NOTIFY fast path did not
 * take), or takes it over after a crash (the job redelivered: EXECUTING with this job id). The
 * attempt number does not change on resume. A takeover is a crash like one seen by claimStarts or
 * the lapsed-lease timer: the lost attempt gets its CRASHED row and the run continues as the next
 * attempt (same ledger epoch: nothing recorded is lost), so that the executor ends a run whose last
 * attempt crashed. Counted as a resume instead, a run that killed its worker on every resume was
 * resumed again until pg-boss gave the job up, and then stayed EXECUTING for good.
 */
export async function claimResume(db: Queryable, input: ClaimInput & { jobId: string }): Promise<Claim | null> {
  const { rows } = await db.query<ClaimedRun & LedgerColumns & { previous_status: string }>(prepared(
    "svc_claim_resume",
    CLAIM_RESUME_SQL,
    [input.runId, input.claimToken, input.workerId, input.workerVersion, input.jobId, input.now],
  ));
  const row = rows[0];
  if (!row) return null;
  const { previous_status, ledger, ledger_version, ...run } = row;
  return { run, previousStatus: previous_status, ledger: (ledger ?? []).map(ledgerEntryFromRow), ledgerVersion: ledger_version, ledgerFrom: "claim" };
}

/**
 * Renews the leases of fast-path executions this worker holds (found by run id, fenced by claim
 * token). Not of an offer it has not taken (or whose acceptance was lost in a crash): that lease
 * lapses, and the timer loop takes the offer back.
 */
export async function renewLeases(db: Queryable, executions: { runId: string; claimToken: string }[], now: Date, leaseMs: number): Promise<void> {
  if (executions.length === 0) return;
  await db.query(
    `UPDATE runs SET lease_expires_at = $3::timestamptz + make_interval(secs => $4::double precision / 1000)
     WHERE id = ANY($1::text[]) AND claim_token = ANY($2::text[]) AND status = 'EXECUTING' AND offered_at IS NULL`,
    [executions.map((e) => e.runId), executions.map((e) => e.claimToken), now, leaseMs],
  );
}

/**
 * The resume fast path: claims WAITING runs a NOTIFY named (with a lease instead of a pg-boss
 * job), clears their resume mark and loads their ledgers, in one statement. Several runs at once
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

/**
 * Claims up to `limit` plain QUEUED runs of this worker's tasks straight from `runs` (CLAIM_QUEUED_SQL),
 * each with a lease of `leaseMs`, oldest first. Run it on a connection with synchronous_commit off
 * (`claimPool`): a claim lost with the WAL is a run still QUEUED, claimed again.
 */
export async function claimQueued(db: Queryable, worker: { id: string; version: string; environmentId: string; tasks: string[] }, limit: number, now: Date, leaseMs: number): Promise<Claim[]> {
  const { rows } = await db.query<ClaimedRun & LedgerColumns>(prepared(
    "svc_claim_queued",
    CLAIM_QUEUED_SQL,
    [worker.environmentId, worker.tasks, limit, worker.id, worker.version, now, leaseMs],
  ));
  return rows.map(({ ledger, ledger_version, ...run }) => ({
    run,
    previousStatus: "QUEUED",
    // Claimed with its TTL cleared, as any start: a run that is never handed back needs none.
    beforeStart: { expireAt: null, startedAt: null },
    ledger: (ledger ?? []).map(ledgerEntryFromRow),
    ledgerVersion: ledger_version,
    ledgerFrom: "claim",
  }));
}
