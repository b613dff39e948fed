-- The ledger of a run a claim just locked, and the run's ledger_version, read in a snapshot taken
-- after the lock (a claim statement calls it for each run it claimed).
--
-- Why a VOLATILE function: under READ COMMITTED, a statement that waits for a row lock re-reads that
-- row when the lock is released, but reads every other table in the snapshot taken when it began. A
-- takeover claim that waited behind the live execution it takes over from (which records a step
-- while holding the run's row FOR SHARE, recordStep) would load a ledger without that step, and run
-- it again. A VOLATILE plpgsql function takes a new snapshot for each statement it runs, here after
-- the claim holds the row: any ledger write fenced by the claim token either committed before it
-- (and is read) or is refused by the new token. Ledger and version come from the one snapshot, so
-- the version still says which ledger the entries are (LedgerCache, migration 0027).
--
-- p_load false (a first attempt, which has no ledger yet) reads nothing: (NULL, 0).
CREATE OR REPLACE FUNCTION svc_claimed_ledger(p_run_id text, p_epoch integer, p_keyed_epoch integer, p_load boolean,
  OUT ledger json, OUT ledger_version integer)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF NOT p_load THEN
    ledger_version := 0;
    RETURN;
  END IF;
  SELECT (SELECT json_agg(l) FROM run_ledger l WHERE l.run_id = p_run_id AND l.epoch IN (p_epoch, p_keyed_epoch)), r.ledger_version
    INTO ledger, ledger_version
    FROM runs r WHERE r.id = p_run_id;
END
$$;
