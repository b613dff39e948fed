-- Every trigger asks whether its run's queue is limited (engine/runs/insert-runs.ts, and
-- svc_queue_is_limited for svc_trigger): a task of the queue that registered a concurrencyLimit or
-- a rateLimit. worker_tasks' primary key (environment_id, task_identifier) made that a read of every
-- task of the environment (~0.5 ms per trigger with 5,000 tasks). This index holds only the tasks
-- with a limit, by queue: the question is one probe, whatever the number of tasks.
CREATE INDEX worker_tasks_limited_queues ON worker_tasks (environment_id, queue_name)
  WHERE concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL;
