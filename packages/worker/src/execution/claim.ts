import type { Queryable, RunRow } from "@svc/runtime/engine";

export interface Claim {
  run: RunRow;
  /** The run's status before this claim: EXECUTING means its previous worker died (a crash). */
  previousStatus: string;
}

export interface ClaimInput {
  runId: string;
  claimToken: string;
  workerId: string;
  workerVersion: string;
  now: Date;
}

/**
 * Starts a new attempt of a QUEUED run, or takes over a run whose previous holder died (pg-boss
 * redelivered the same job after its heartbeat lapsed). The attempt number goes up by one; the
 * ledger epoch does not (a crash loses nothing). Expired TTLs are honoured here too.
 */
export async function claimStart(db: Queryable, input: ClaimInput & { jobId: string }): Promise<Claim | null> {
  const { rows } = await db.query<RunRow & { previous_status: string }>(
    `WITH prev AS (SELECT id, status FROM runs WHERE id = $1 FOR UPDATE)
     UPDATE runs r SET status = 'EXECUTING', attempt_number = r.attempt_number + 1, claim_token = $2, worker_id = $3,
       worker_version = $4, job_id = $5, lease_expires_at = NULL, available_at = NULL,
       started_at = coalesce(r.started_at, $6), updated_at = now()
     FROM prev
     WHERE r.id = prev.id
       AND ((prev.status = 'QUEUED' AND (r.expire_at IS NULL OR r.expire_at > $6)) OR (prev.status = 'EXECUTING' AND r.job_id = $5))
     RETURNING r.*, prev.status AS previous_status`,
    [input.runId, input.claimToken, input.workerId, input.workerVersion, input.jobId, input.now],
  );
  const row = rows[0];
  if (!row) return null;
  const { previous_status, ...run } = row;
  await db.query(
    `UPDATE run_attempts SET status = 'CRASHED', finished_at = $2, error = '{"name":"WorkerCrash","message":"The worker executing this attempt stopped responding"}'
     WHERE run_id = $1 AND status = 'EXECUTING'`,
    [input.runId, input.now],
  );
  await db.query(
    `INSERT INTO run_attempts (run_id, number, status, worker_id, worker_version, started_at) VALUES ($1, $2, 'EXECUTING', $3, $4, $5)
     ON CONFLICT (run_id, number) DO NOTHING`,
    [run.id, run.attempt_number, input.workerId, input.workerVersion, input.now],
  );
  return { run: run as RunRow, previousStatus: previous_status };
}

/**
 * Resumes a WAITING run whose wait resolved. `jobId` null = the NOTIFY fast path, which holds a
 * lease instead of a pg-boss job; a job id = the durable backstop (or its redelivery after a crash).
 * The attempt number does not change on resume.
 */
export async function claimResume(db: Queryable, input: ClaimInput & { jobId: string | null; leaseMs: number }): Promise<Claim | null> {
  const { rows } = await db.query<RunRow>(
    `UPDATE runs SET status = 'EXECUTING', claim_token = $2, worker_id = $3, worker_version = $4, job_id = $5,
       lease_expires_at = CASE WHEN $5::text IS NULL THEN $6::timestamptz + make_interval(secs => $7::double precision / 1000) END,
       updated_at = now()
     WHERE id = $1 AND (status = 'WAITING' OR ($5::text IS NOT NULL AND status = 'EXECUTING' AND job_id = $5))
     RETURNING *`,
    [input.runId, input.claimToken, input.workerId, input.workerVersion, input.jobId, input.now, input.leaseMs],
  );
  const run = rows[0];
  return run ? { run, previousStatus: "WAITING" } : null;
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
