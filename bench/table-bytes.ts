import type { Pool } from "../packages/runtime/src/db/index.ts";

export interface TableBytes {
  table: string;
  rows: number;
  heap: number;
  indexes: number;
}

const TABLES = ["runs", "run_attempts", "run_ledger", "waitpoints", "packets", "batches", "sessions", "session_runs", "schedule_ticks", "wal_flush_marks"];

/**
 * Each table's heap (with its TOAST) and index bytes, and its rows as counted by the last ANALYZE
 * (`reltuples`).
 */
export async function tableBytes(pool: Pool): Promise<TableBytes[]> {
  const { rows } = await pool.query<{ table: string; rows: string; heap: string; indexes: string }>(
    `SELECT c.relname AS table, greatest(c.reltuples, 0)::bigint AS rows, pg_table_size(c.oid) AS heap, pg_indexes_size(c.oid) AS indexes
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relname = ANY($1) AND c.relkind = 'r'`,
    [TABLES],
  );
  return rows
    .map((r) => ({ table: r.table, rows: Number(r.rows), heap: Number(r.heap), indexes: Number(r.indexes) }))
    .sort((a, b) => TABLES.indexOf(a.table) - TABLES.indexOf(b.table));
}

const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(bytes < 10_485_760 ? 2 : 0)} MB`;

/** A table of bytes per run: each table's heap and indexes divided by the runs, and per row of its own. */
export function bytesReport(tables: TableBytes[]): string[] {
  const runs = tables.find((t) => t.table === "runs")?.rows ?? 0;
  const per = (bytes: number, rows: number) => (rows > 0 ? Math.round(bytes / rows).toLocaleString("en-US") : "—");
  const total = tables.reduce((s, t) => s + t.heap + t.indexes, 0);
  return [
    `| table | rows | heap | indexes | bytes per run (heap + indexes) | bytes per row of its own |`,
    `|---|---|---|---|---|---|`,
    ...tables.map((t) => `| ${t.table} | ${t.rows.toLocaleString("en-US")} | ${mb(t.heap)} | ${mb(t.indexes)} | ${per(t.heap, runs)} + ${per(t.indexes, runs)} | ${per(t.heap + t.indexes, t.rows)} |`),
    `| all | | | | ${per(total, runs)} | |`,
  ];
}

/** Dead and live tuples and the autovacuum count of the tables that change on every run. */
export async function deadTuples(pool: Pool): Promise<{ table: string; live: number; dead: number; autovacuums: number; bytes: number }[]> {
  const { rows } = await pool.query<{ table: string; live: string; dead: string; autovacuums: string; bytes: string }>(
    `SELECT schemaname || '.' || relname AS table, n_live_tup AS live, n_dead_tup AS dead, autovacuum_count AS autovacuums, pg_total_relation_size(relid) AS bytes
     FROM pg_stat_user_tables WHERE schemaname = 'public' AND relname = ANY($1) ORDER BY n_dead_tup DESC`,
    [TABLES],
  );
  return rows.map((r) => ({ table: r.table, live: Number(r.live), dead: Number(r.dead), autovacuums: Number(r.autovacuums), bytes: Number(r.bytes) }));
}
