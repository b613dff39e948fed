// The one place svc uses pg-boss.
export { startBoss, bossNotifyChannel, BOSS_SCHEMA } from "./boss.ts";
export { PgBossDispatcher, HEARTBEAT_SECONDS } from "./dispatcher.ts";
export { JobConsumer, type ConsumedJob, type QueueSubscription } from "./consumer.ts";
export { installQueueSchema } from "./install.ts";
export { startQueueName, resumeQueueName } from "./names.ts";
export { PgBoss } from "pg-boss"; // for the raw pg-boss baseline in bench/
