import { CLAIMED_COLUMNS, KEYED_EPOCH, prepared, ledgerEntryFromRow, type ClaimedRun, type LedgerEntry, type LedgerRow, type Queryable, type RunRow } from "@svc/runtime/engine";

export { CLAIMED_COLUMNS, type ClaimedRun };
export const RETURN_CLAIMED = CLAIMED_COLUMNS.map((c) => `r.${c}`).join(", ");

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
}

/** The ledger entries a claimed run (the CTE `claimed`) replays: its epoch's and keyed ones. */
const CLAIMED_LEDGER = `(SELECT json_agg(l) FROM run_ledger l WHERE l.run_id = claimed.id AND l.epoch IN (claimed.ledger_epoch, ${KEYED_EPOCH}))`;
export const LEDGER_OF_CLAIMED = `${CLAIMED_LEDGER} AS ledger`;
/** A first attempt has no ledger yet (only the run's own executions write one): no lookup. */
const LEDGER_OF_CLAIMED_START = `CASE WHEN claimed.attempt_number > 1 OR claimed.ledger_epoch > 0 THEN ${CLAIMED_LEDGER} END AS ledger`;

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
  const { rows } = await db.query<ClaimedRun & { previous_status: string; previous_expire_at: Date | null; previous_started_at: Date | null; ledger: LedgerRow[] | null }>(prepared(
    "svc_claim_starts",
    `WITH input AS (SELECT * FROM json_to_recordset($1::json) AS i(run_id text, claim_token text, job_id text)),
     prev AS (SELECT r.id, r.status, r.updated_at, r.expire_at, r.started_at FROM runs r WHERE r.id IN (SELECT run_id FROM input) ORDER BY r.id FOR UPDATE),
     claimed AS (
       UPDATE runs r SET status = 'EXECUTING', attempt_number = r.attempt_number + 1, claim_token = i.claim_token, worker_id = $2,
         worker_version = $3, job_id = i.job_id, lease_expires_at = NULL, available_at = NULL,
         -- A started run can no longer expire; clearing it also keeps it out of runs_expiring.
         expire_at = NULL,
         started_at = coalesce(r.started_at, $4), updated_at = $4
       FROM prev JOIN input i ON i.run_id = prev.id
       WHERE r.id = prev.id
         -- A QUEUED run in a retry backoff (available_at ahead) is not started by a stale job (one
         -- pg-boss redelivered): the timer loop enqueues it when the backoff has passed.
         AND ((prev.status = 'QUEUED' AND (r.expire_at IS NULL OR r.expire_at > $4) AND (r.available_at IS NULL OR r.available_at <= $4))
           OR (prev.status = 'EXECUTING' AND r.job_id = i.job_id))
       RETURNING ${RETURN_CLAIMED}, prev.status AS previous_status, prev.expire_at AS previous_expire_at, prev.started_at AS previous_started_at),
     crashed AS (
       -- Attempt rows are written when an attempt ends; one whose worker died never ended: record it now.
       INSERT INTO run_attempts (run_id, number, status, started_at, finished_at, error)
       SELECT c.id, c.attempt_number - 1, 'CRASHED', coalesce(p.updated_at, $4), $4,
         '{"name":"WorkerCrash","message":"The worker executing this attempt stopped responding"}'
       FROM claimed c JOIN prev p ON p.id = c.id WHERE c.previous_status = 'EXECUTING' AND c.attempt_number > 1
       ON CONFLICT (run_id, number) DO NOTHING)
     SELECT claimed.*, ${LEDGER_OF_CLAIMED_START} FROM claimed`,
    [JSON.stringify(inputs.map((i) => ({ run_id: i.runId, claim_token: i.claimToken, job_id: i.jobId }))), worker.id, worker.version, now],
  ));
  // Matched by claim token: two jobs for one run yield one claim, the other gets null.
  const byToken = new Map(rows.map((row) => [row.claim_token, row]));
  return inputs.map((input) => {
    const row = byToken.get(input.claimToken);
    if (!row) return null;
    const { previous_status, previous_expire_at, previous_started_at, ledger, ...run } = row;
    return {
      run,
      previousStatus: previous_status,
      beforeStart: { expireAt: previous_expire_at, startedAt: previous_started_at },
      ledger: (ledger ?? []).map(ledgerEntryFromRow),
    };
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
  const { rows } = await db.query<ClaimedRun & { previous_status: string; ledger: LedgerRow[] | null }>(prepared(
    "svc_claim_resume",
    `WITH prev AS (SELECT r.id, r.status, r.updated_at FROM runs r WHERE r.id = $1 FOR UPDATE),
     claimed AS (
       UPDATE runs r SET status = 'EXECUTING', claim_token = $2, worker_id = $3, worker_version = $4, job_id = $5,
         attempt_number = CASE WHEN prev.status = 'EXECUTING' THEN r.attempt_number + 1 ELSE r.attempt_number END,
         lease_expires_at = NULL, resume_due_at = NULL, offered_at = NULL, updated_at = $6
       FROM prev
       -- A WAITING run with a wait still open is waiting for it, not for this job: a stale resume
       -- job (redelivered after the run resumed another way and suspended again) does nothing.
       WHERE r.id = prev.id AND ((prev.status = 'WAITING' AND NOT EXISTS (SELECT 1 FROM run_ledger l WHERE l.run_id = r.id AND NOT l.resolved))
         OR (prev.status = 'EXECUTING' AND r.job_id = $5))
       RETURNING ${RETURN_CLAIMED}, prev.status AS previous_status),
     crashed AS (
       INSERT INTO run_attempts (run_id, number, status, started_at, finished_at, error)
       SELECT c.id, c.attempt_number - 1, 'CRASHED', coalesce(p.updated_at, $6), $6,
         '{"name":"WorkerCrash","message":"The worker executing this attempt stopped responding"}'
       FROM claimed c JOIN prev p ON p.id = c.id WHERE c.previous_status = 'EXECUTING'
       ON CONFLICT (run_id, number) DO NOTHING)
     SELECT claimed.*, ${LEDGER_OF_CLAIMED} FROM claimed`,
    [input.runId, input.claimToken, input.workerId, input.workerVersion, input.jobId, input.now],
  ));
  const row = rows[0];
  if (!row) return null;
  const { previous_status, ledger, ...run } = row;
  return { run, previousStatus: previous_status, ledger: (ledger ?? []).map(ledgerEntryFromRow) };
}

/** Renews the leases of fast-path executions this worker holds. */
export async function renewLeases(db: Queryable, claimTokens: string[], now: Date, leaseMs: number): Promise<void> {
  if (claimTokens.length === 0) return;
  await db.query(
    `UPDATE runs SET lease_expires_at = $2::timestamptz + make_interval(secs => $3::double precision / 1000)
     WHERE claim_token = ANY($1::text[]) AND status = 'EXECUTING'`,
    [claimTokens, now, leaseMs],
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
  const set = `status = 'EXECUTING', worker_id = $3, worker_version = $4, job_id = NULL, resume_due_at = NULL, offered_at = NULL,
    lease_expires_at = $5::timestamptz + make_interval(secs => $6::double precision / 1000), updated_at = $5`;
  const values = [inputs.map((i) => i.runId), inputs.map((i) => i.claimToken), worker.id, worker.version, now, leaseMs, worker.tasks];
  const { rows } = await db.query<ClaimedRun & { ledger: LedgerRow[] | null }>(
    inputs.length === 1
      ? // One run (the common case) is a plain guarded update: half the cost of the batch form.
        prepared(
          "svc_claim_fast_resume",
          `WITH claimed AS (
             UPDATE runs r SET ${set}, claim_token = ($2::text[])[1]
             WHERE r.id = ($1::text[])[1] AND r.status = 'WAITING' AND r.resume_due_at IS NOT NULL AND r.task_identifier = ANY($7::text[])
             RETURNING ${RETURN_CLAIMED})
           SELECT claimed.*, ${LEDGER_OF_CLAIMED} FROM claimed`,
          values,
        )
      : prepared(
          "svc_claim_fast_resumes",
          `WITH input AS (SELECT * FROM unnest($1::text[], $2::text[]) AS i(run_id, claim_token)),
           free AS (
             SELECT r.id FROM runs r WHERE r.id IN (SELECT run_id FROM input) AND r.status = 'WAITING' AND r.resume_due_at IS NOT NULL
               AND r.task_identifier = ANY($7::text[])
             ORDER BY r.id FOR UPDATE SKIP LOCKED),
           claimed AS (
             UPDATE runs r SET ${set}, claim_token = i.claim_token
             FROM free JOIN input i ON i.run_id = free.id
             WHERE r.id = free.id
             RETURNING ${RETURN_CLAIMED})
           SELECT claimed.*, ${LEDGER_OF_CLAIMED} FROM claimed`,
          values,
        ),
  );
  const byToken = new Map(rows.map((row) => [row.claim_token, row]));
  return inputs.map((input) => {
    const row = byToken.get(input.claimToken);
    if (!row) return null;
    const { ledger, ...run } = row;
    return { run, previousStatus: "WAITING", ledger: (ledger ?? []).map(ledgerEntryFromRow) };
  });
}
