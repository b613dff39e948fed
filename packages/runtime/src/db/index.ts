export { createPool, flushWal, isLockConflict, isPool, isUniqueViolation, prepared, preparedText, retryOnConflict, withTransaction, type Queryable, type Pool, type PoolClient, type TransactionOptions } from "./queryable.ts";
export { NotificationListener, type NotificationHandler } from "./notification-listener.ts";
export { migrate, migrationsApplied, loadMigrations, loadFunctionFiles, checksumOf, MIGRATIONS_DIR, FUNCTIONS_DIR, type MigrateOptions, type MigrateResult } from "./migrate.ts";
export { dumpSchema, SCHEMA_DUMP_PATH } from "./schema-dump.ts";
export { isDatabaseUnavailable, retryWhileUnavailable } from "./unavailable.ts";
export { retryWrite } from "./retry-write.ts";
export { errorReporter } from "./error-reporter.ts";
export type { PoolOptions } from "./queryable.ts";
export { openDatabase, type OpenDatabase } from "./open-database.ts";
