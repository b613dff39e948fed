-- Inserting a run is svc's hottest write (a 500-run batch is one statement). Foreign keys cost a
-- trigger and a row lock on the referenced row per inserted run (about 40 % of a batch insert
-- here), so runs keeps none: every run is written by the engine, with the environment, project,
-- batch and parent ids of rows it has just read, and nothing in svc deletes those rows.
ALTER TABLE runs
  DROP CONSTRAINT runs_environment_id_fkey,
  DROP CONSTRAINT runs_project_id_fkey,
  DROP CONSTRAINT runs_batch_id_fkey,
  DROP CONSTRAINT runs_parent_run_id_fkey;
