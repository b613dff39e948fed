-- One queue: the run row is the queue entry for every start and every resume, and pg-boss leaves.
-- A worker claims runs from `runs` itself (engine/runs/transitions/claim-ready.ts): QUEUED runs
-- whose start is due, and WAITING runs whose resume is due (`resume_due_at` set: a completion, a
-- lapsed or declined offer marked it). `claim_from_runs` now says which claim takes a run: true,
-- the plain claim (its queue has no concurrencyLimit); false, the claim of its queue
-- (CLAIM_LIMITED_SQL), which counts the queue's executing runs, per concurrency key, under a lock of
-- its own. Every execution holds a lease its worker renews; one that lapses is taken over by the
-- lapse pass (timers/lapsed-leases.ts), whoever started it.

-- Resumes the plain claim takes, oldest mark first.
CREATE INDEX runs_resumable ON runs (environment_id, resume_due_at, id)
  WHERE status = 'WAITING' AND resume_due_at IS NOT NULL AND claim_from_runs;
-- Starts and resumes of limited queues, in their queue's order.
CREATE INDEX runs_limited_ready ON runs (environment_id, queue_name, created_at, id)
  WHERE NOT claim_from_runs AND ((status = 'QUEUED' AND available_at IS NULL) OR (status = 'WAITING' AND resume_due_at IS NOT NULL));
-- What a limited queue's claim counts: its executions, per concurrency key.
CREATE INDEX runs_limited_executing ON runs (environment_id, queue_name, concurrency_key)
  WHERE status = 'EXECUTING' AND NOT claim_from_runs;
-- Resumes no longer become jobs when due: nothing looks for the earliest mark.
DROP INDEX IF EXISTS runs_resume_due;

-- Most queues have no limit: a run inserted without saying goes to the plain claim.
ALTER TABLE runs ALTER COLUMN claim_from_runs SET DEFAULT true;

-- Every live run goes to the claim its queue wants today (runs from before 0035 had jobs, and
-- false). The test is svc_queue_is_limited's, written out: function files are applied after the
-- migrations.
UPDATE runs r SET claim_from_runs = NOT EXISTS (
    SELECT 1 FROM worker_tasks wt
    WHERE wt.environment_id = r.environment_id AND wt.queue_name = r.queue_name AND wt.concurrency_limit IS NOT NULL)
  WHERE r.list_status = 'LIVE';

-- Resume jobs that pg-boss still held: their runs' resumes are due now. A run that resumed another
-- way since only replays and waits again.
DO $$
BEGIN
  IF to_regclass('pgboss.job') IS NOT NULL THEN
    UPDATE runs SET resume_due_at = now()
    WHERE status = 'WAITING' AND resume_due_at IS NULL AND id IN (
      SELECT data->>'runId' FROM pgboss.job
      WHERE state IN ('created', 'retry', 'active') AND data->>'kind' = 'resume');
  END IF;
END $$;

-- Executions a pg-boss job held get a lease instead: if their worker (an old one, which renews
-- no lease) does not finish them in time, the lapse pass takes them over as after a crash, a new
-- attempt that replays the ledger.
UPDATE runs SET lease_expires_at = now() + interval '30 seconds'
  WHERE status = 'EXECUTING' AND job_id IS NOT NULL;
ALTER TABLE runs DROP COLUMN job_id;

DROP SCHEMA IF EXISTS pgboss CASCADE;

-- The completion no longer has a grace period (a resume is claimable at once) nor a timers wake-up
-- for limited queues (their workers are woken on svc_runs_ready): a new signature
-- (sql/functions/svc_complete_waitpoint.sql).
DROP FUNCTION IF EXISTS svc_complete_waitpoint(text, text, timestamptz, text, text, boolean, text, text, jsonb, double precision, text, text, jsonb);
