-- New jobs wake one worker, not all: the dispatcher that inserts a job NOTIFYs a live worker that
-- consumes the job's pg-boss queue, on that worker's own channel (a worker with a free slot, by
-- workers.full_since; enough of them for the jobs inserted; every one only when all are full).
-- pg-boss's own NOTIFY, which every worker heard, is off. `queues` is what the worker fetches
-- from (pg-boss queue names), written when it registers.
--
-- NULL for rows of workers started before this migration: they are never woken by name (they do
-- not listen for it); a job whose queue no registered worker consumes is announced on pg-boss's
-- channel to all, as before.
ALTER TABLE workers ADD COLUMN queues text[];
