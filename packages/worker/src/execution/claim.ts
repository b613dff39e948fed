import { KEYED_EPOCH, LIMITED_QUEUE_SQL, prepared, ledgerEntryFromRow, type LedgerEntry, type LedgerRow, type Queryable, type RunRow } from "@svc/runtime/engine";

export interface Claim {
  run: RunRow;
  /** The run's status before this claim: EXECUTING means its previous worker died (a crash). */
  previousStatus: string;
  /** The entries the execution replays, loaded by the claim statement itself. */
  ledger: LedgerEntry[];
}

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
  const { rows } = await db.query<RunRow & { previous_status: string; ledger: LedgerRow[] | null }>(prepared(
    "svc_claim_starts",
    `WITH input AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS i(run_id, claim_token, job_id)),
     prev AS (SELECT r.id, r.status, r.updated_at FROM runs r WHERE r.id IN (SELECT run_id FROM input) ORDER BY r.id FOR UPDATE),
     claimed AS (
       UPDATE runs r SET status = 'EXECUTING', attempt_number = r.attempt_number + 1, claim_token = i.claim_token, worker_id = $4,
         worker_version = $5, job_id = i.job_id, lease_expires_at = NULL, available_at = NULL,
         -- A started run can no longer expire; clearing it also keeps it out of runs_expiring.
         expire_at = NULL,
         started_at = coalesce(r.started_at, $6), updated_at = now()
       FROM prev JOIN input i ON i.run_id = prev.id
       WHERE r.id = prev.id
         AND ((prev.status = 'QUEUED' AND (r.expire_at IS NULL OR r.expire_at > $6)) OR (prev.status = 'EXECUTING' AND r.job_id = i.job_id))
       RETURNING r.*, prev.status AS previous_status),
     crashed AS (
       -- Attempt rows are written when an attempt ends; one whose worker died never ended: record it now.
       INSERT INTO run_attempts (run_id, number, status, started_at, finished_at, error)
       SELECT c.id, c.attempt_number - 1, 'CRASHED', coalesce(p.updated_at, $6), $6,
         '{"name":"WorkerCrash","message":"The worker executing this attempt stopped responding"}'
       FROM claimed c JOIN prev p ON p.id = c.id WHERE c.previous_status = 'EXECUTING' AND c.attempt_number > 1
       ON CONFLICT (run_id, number) DO NOTHING)
     SELECT claimed.*, (SELECT json_agg(l) FROM run_ledger l WHERE l.run_id = claimed.id AND l.epoch IN (claimed.ledger_epoch, ${KEYED_EPOCH})) AS ledger
     FROM claimed`,
    [inputs.map((i) => i.runId), inputs.map((i) => i.claimToken), inputs.map((i) => i.jobId), worker.id, worker.version, now],
  ));
  // Matched by claim token: two jobs for one run yield one claim, the other gets null.
  const byToken = new Map(rows.map((row) => [row.claim_token, row]));
  return inputs.map((input) => {
    const row = byToken.get(input.claimToken);
    if (!row) return null;
    const { previous_status, ledger, ...run } = row;
    return { run: run as RunRow, previousStatus: previous_status, ledger: (ledger ?? []).map(ledgerEntryFromRow) };
  });
}

/**
 * Resumes a WAITING run whose wait resolved. `jobId` null = the NOTIFY fast path, which holds a
 * lease instead of a pg-boss job; a job id = the durable backstop (or its redelivery after a crash).
 * The attempt number does not change on resume.
 */
export async function claimResume(db: Queryable, input: ClaimInput & { jobId: string | null; leaseMs: number }): Promise<Claim | null> {
  // Claim and ledger load in one round trip: this is the hot path of every resume.
  const { rows } = await db.query<RunRow & { ledger: LedgerRow[] | null }>(prepared(
    "svc_claim_resume",
    `WITH claimed AS (
       UPDATE runs r SET status = 'EXECUTING', claim_token = $2, worker_id = $3, worker_version = $4, job_id = $5,
         lease_expires_at = CASE WHEN $5::text IS NULL THEN $6::timestamptz + make_interval(secs => $7::double precision / 1000) END,
         updated_at = now()
       WHERE id = $1 AND (status = 'WAITING' OR ($5::text IS NOT NULL AND status = 'EXECUTING' AND job_id = $5))
         -- The fast path (no job) leaves runs of limited queues to the resume job the dispatcher
         -- put in their queue, where pg-boss counts it against the limit.
         AND ($5::text IS NOT NULL OR NOT EXISTS (${LIMITED_QUEUE_SQL}))
       RETURNING *)
     SELECT claimed.*, (SELECT json_agg(l) FROM run_ledger l WHERE l.run_id = claimed.id AND l.epoch IN (claimed.ledger_epoch, ${KEYED_EPOCH})) AS ledger
     FROM claimed`,
    [input.runId, input.claimToken, input.workerId, input.workerVersion, input.jobId, input.now, input.leaseMs],
  ));
  const row = rows[0];
  if (!row) return null;
  const { ledger, ...run } = row;
  return { run: run as RunRow, previousStatus: "WAITING", ledger: (ledger ?? []).map(ledgerEntryFromRow) };
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
 * The resume fast path for many runs at once (one NOTIFY can name 100): claims the WAITING runs
 * no other worker is claiming right now (SKIP LOCKED, so workers hearing the same NOTIFY never
 * wait on or deadlock with each other) and loads their ledgers, in one statement. Runs of a queue
 * with a concurrencyLimit are left to the resume job in their queue. Results are in input order.
 */
export async function claimFastResumes(db: Queryable, inputs: { runId: string; claimToken: string }[], worker: { id: string; version: string }, now: Date, leaseMs: number): Promise<(Claim | null)[]> {
  const { rows } = await db.query<RunRow & { ledger: LedgerRow[] | null }>(prepared(
    "svc_claim_fast_resumes",
    `WITH input AS (SELECT * FROM unnest($1::text[], $2::text[]) AS i(run_id, claim_token)),
     free AS (
       SELECT r.id FROM runs r
       WHERE r.id IN (SELECT run_id FROM input) AND r.status = 'WAITING' AND NOT EXISTS (${LIMITED_QUEUE_SQL})
       ORDER BY r.id FOR UPDATE SKIP LOCKED),
     claimed AS (
       UPDATE runs r SET status = 'EXECUTING', claim_token = i.claim_token, worker_id = $3, worker_version = $4, job_id = NULL,
         lease_expires_at = $5::timestamptz + make_interval(secs => $6::double precision / 1000), updated_at = now()
       FROM free JOIN input i ON i.run_id = free.id
       WHERE r.id = free.id
       RETURNING r.*)
     SELECT claimed.*, (SELECT json_agg(l) FROM run_ledger l WHERE l.run_id = claimed.id AND l.epoch IN (claimed.ledger_epoch, ${KEYED_EPOCH})) AS ledger
     FROM claimed`,
    [inputs.map((i) => i.runId), inputs.map((i) => i.claimToken), worker.id, worker.version, now, leaseMs],
  ));
  const byToken = new Map(rows.map((row) => [row.claim_token, row]));
  return inputs.map((input) => {
    const row = byToken.get(input.claimToken);
    if (!row) return null;
    const { ledger, ...run } = row;
    return { run: run as RunRow, previousStatus: "WAITING", ledger: (ledger ?? []).map(ledgerEntryFromRow) };
  });
}
