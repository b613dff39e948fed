// The one place svc uses pg-boss: API and worker reach it only through this package.
export { startBoss, BOSS_NOTIFY_CHANNEL, BOSS_SCHEMA, type BossOptions } from "./boss.ts";
export { PgBossDispatcher, ENDED_JOB_SECONDS, HEARTBEAT_SECONDS, QUEUED_JOB_SECONDS } from "./dispatcher.ts";
export { JobConsumer, type ConsumedJob, type ConsumerOptions, type QueueDb, type QueueSubscription } from "./consumer.ts";
export { installQueueSchema } from "./install.ts";
export { consumerFetch, type FetchTail } from "./fetch-statement.ts";
export { isRunsQueueName, isStartQueueName, runsQueueName, startQueueName, resumeQueueName } from "./names.ts";
export { wakeChannel, wakeWorkers, WAKE_CHANNEL_PREFIX, type InsertedJobs } from "./wake-workers.ts";
export { PgBoss } from "pg-boss"; // the instance type svc passes around; also the raw pg-boss baseline in bench/
