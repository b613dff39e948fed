-- An attempt row is written in the statement that ends the attempt (or records its crash), for the
-- run that statement has just updated, so its foreign key checked what the statement guarantees,
-- at a trigger and a row lock on the run per attempt (about 60 % of a batch's attempt inserts,
-- measured). Like runs (0008), run_attempts keeps no foreign key; nothing in svc deletes runs.
ALTER TABLE run_attempts DROP CONSTRAINT run_attempts_run_id_fkey;
