export { createPool, flushWal, isLockConflict, isPool, isUniqueViolation, prepared, preparedText, retryOnConflict, withTransaction, type Queryable, type Pool, type PoolClient, type TransactionOptions } from "./queryable.ts";
export { NotificationListener, type NotificationHandler } from "./notification-listener.ts";
export { migrate, migrationsApplied, loadMigrations } from "./migrate.ts";
export { isDatabaseUnavailable, retryWhileUnavailable } from "./unavailable.ts";
export { errorReporter } from "./error-reporter.ts";
export type { PoolOptions } from "./queryable.ts";
