-- Resume offers that carry only what a completion changed. A worker keeps, in memory, the ledger
-- of each run it suspended (bounded); a completion that offers the run back to that worker sends
-- only the entries it resolved, and the worker adds them to its copy instead of receiving (or, past
-- a NOTIFY's 8,000 bytes, loading) the whole ledger again: a session's run has one entry per
-- message, so its offers grew with the conversation.
--
-- `ledger_version` counts what can change a run's ledger behind the back of the execution that
-- holds it in memory: it goes up by one when an execution suspends the run and when a completion
-- resolves any of its entries. An execution knows the version of the ledger it started from (a
-- claim reads it in the same snapshot as the ledger; an offer says it); if it suspends the run at
-- exactly one more, nothing else touched the ledger meanwhile and its copy is the ledger. An offer
-- with only the resolved entries is used only when the worker's copy has exactly the version the
-- completion started from; otherwise the worker loads the ledger as before.
--
-- `suspended_worker_id` is the worker whose execution last suspended the run (runs.worker_id is
-- cleared on suspension): a completion offers the run to that worker when it is live and has the
-- run's task, so that its copy is used.
--
-- Neither is indexed: both change on updates that stay HOT.
ALTER TABLE runs
  ADD COLUMN ledger_version integer NOT NULL DEFAULT 0,
  ADD COLUMN suspended_worker_id text;
