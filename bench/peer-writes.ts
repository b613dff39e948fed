import pg from "pg";

/**
 * What a side persisted, read from Postgres's own counters in its database: rows inserted,
 * updated (of which HOT) and deleted per table, and transactions committed (read-only ones too:
 * Postgres counts no writing transactions per database; its WAL and transaction ids are
 * server-wide, and the shared server has other writers).
 * Backends publish their counters when idle for 10 s at most (PGSTAT_IDLE_INTERVAL), so a
 * snapshot is taken after `IDLE_MS` of quiet.
 */
export interface WriteSnapshot {
  tables: Map<string, { ins: number; upd: number; hot: number; del: number }>;
  commits: number;
}

export const IDLE_MS = 11_000;

export async function writeSnapshot(url: string): Promise<WriteSnapshot> {
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ name: string; ins: string; upd: string; hot: string; del: string }>(
      "SELECT schemaname || '.' || relname AS name, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del FROM pg_stat_user_tables",
    );
    const db = await client.query<{ commits: string }>("SELECT xact_commit AS commits FROM pg_stat_database WHERE datname = current_database()");
    return {
      tables: new Map(tables.rows.map((r) => [r.name, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del) }])),
      commits: Number(db.rows[0]!.commits),
    };
  } finally {
    await client.end();
  }
}

/** Per unit, between two snapshots: tables with at least 0.05 rows written per unit, then totals. */
export function writesPerUnit(before: WriteSnapshot, after: WriteSnapshot, units: number): { tables: string[]; rows: number; commits: number } {
  const tables: string[] = [];
  let rows = 0;
  for (const [name, a] of after.tables) {
    const b = before.tables.get(name) ?? { ins: 0, upd: 0, hot: 0, del: 0 };
    const ins = (a.ins - b.ins) / units;
    const upd = (a.upd - b.upd) / units;
    const hot = (a.hot - b.hot) / units;
    const del = (a.del - b.del) / units;
    rows += ins + upd + del;
    if (ins + upd + del < 0.05) continue;
    const parts = [ins >= 0.05 ? `ins ${ins.toFixed(2)}` : "", upd >= 0.05 ? `upd ${upd.toFixed(2)} (HOT ${hot.toFixed(2)})` : "", del >= 0.05 ? `del ${del.toFixed(2)}` : ""].filter(Boolean);
    tables.push(`${name}: ${parts.join(", ")}`);
  }
  return { tables: tables.sort(), rows, commits: (after.commits - before.commits) / units };
}
