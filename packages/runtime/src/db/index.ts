export { createPool, isUniqueViolation, prepared, preparedText, withTransaction, type Queryable, type Pool, type PoolClient } from "./queryable.ts";
export { NotificationListener, type NotificationHandler } from "./notification-listener.ts";
export { migrate, migrationsApplied, loadMigrations } from "./migrate.ts";
