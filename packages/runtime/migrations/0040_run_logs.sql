-- What task code logs during a run (`logger.*`, `console.*`): docs/run-logs.md. Written by the
-- worker in batches, off the run's hot path (worker/src/execution/run-log-writer.ts), read by the
-- run's dashboard page and GET /api/v1/runs/{id}/trace and /events. Deleted by retention with the
-- run (engine/retention/delete-runs.ts). Like runs and run_attempts, no foreign key: a log insert
-- takes no lock on the run's row.
--
-- `seq` numbers a run's lines in the order they were written (from run_log_totals, below);
-- `attempt` is the attempt that logged it; `step` the step.run whose function logged it, if any;
-- `ledger_epoch`/`ledger_key` the durable call (step, wait) it came before, in the run's ledger:
-- a line "falls" after the previous durable call and before that one.
CREATE TABLE run_logs (
  environment_id text NOT NULL,
  run_id text NOT NULL,
  seq integer NOT NULL,
  attempt integer NOT NULL,
  level text NOT NULL CHECK (level IN ('debug', 'log', 'info', 'warn', 'error')),
  message text NOT NULL,
  attributes jsonb,
  logged_at timestamptz NOT NULL,
  source text NOT NULL CHECK (source IN ('logger', 'console', 'svc')),
  step text,
  ledger_epoch integer,
  ledger_key text,
  PRIMARY KEY (run_id, seq)
);

-- Per run: how much of the cap its lines took (lines, bytes of message and attributes), and how
-- many lines were dropped past it. The writer locks a run's row while it decides which lines fit,
-- so two writers (an old and a new execution of the run) cannot both take the last place, and it
-- hands out `seq`.
CREATE TABLE run_log_totals (
  run_id text PRIMARY KEY,
  environment_id text NOT NULL,
  lines integer NOT NULL DEFAULT 0,
  bytes bigint NOT NULL DEFAULT 0,
  dropped integer NOT NULL DEFAULT 0
);
