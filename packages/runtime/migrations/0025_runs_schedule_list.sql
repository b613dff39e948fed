-- The run list filtered by schedule (the dashboard's runs of one schedule): without an index it
-- walks the environment's runs_list until it has a page, which for a daily schedule is the whole
-- 7-day window (a million runs over 30 days: ~230,000 runs, p50 180 ms; with this index 3 ms;
-- bench/README.md). Only scheduled runs have entries, and schedule_id never changes after the
-- insert, so claims, finishes and resumes stay HOT updates and a run triggered any other way
-- costs nothing here (500-run trigger transactions measured the same with and without it).
CREATE INDEX runs_schedule ON runs (schedule_id, created_at DESC, id DESC) WHERE schedule_id IS NOT NULL;
