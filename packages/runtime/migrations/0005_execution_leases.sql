-- Executions that did not come through a pg-boss job (the resume fast path) hold a lease that the
-- worker renews; a run whose lease lapsed lost its worker and is restarted from its ledger.
ALTER TABLE runs ADD COLUMN lease_expires_at timestamptz;
CREATE INDEX runs_lease ON runs (lease_expires_at) WHERE status = 'EXECUTING' AND job_id IS NULL;
