export { createPool, prepared, preparedText, withTransaction, type Queryable, type Pool, type PoolClient } from "./queryable.ts";
export { migrate, migrationsApplied, loadMigrations } from "./migrate.ts";
