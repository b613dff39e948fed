import { readFileSync } from "node:fs";
import type pg from "pg";

/** CPU time (user + system, ms) a process has used so far, from /proc/<pid>/stat; 0 when it is gone. */
export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces, so split after its closing parenthesis).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / 100;
  } catch {
    return 0;
  }
}

/**
 * The CPU that one database's server backends use over a stretch of time (Postgres on this
 * machine: their pids are readable), by the pids connected at `start`: warm pools keep theirs.
 */
export async function databaseCpu(admin: Pick<pg.Client, "query">, database: string): Promise<{ stop(): number }> {
  const { rows } = await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [database]);
  const pids = rows.map((r) => r.pid);
  const before = pids.map(cpuMsOf);
  return { stop: () => pids.reduce((sum, pid, i) => sum + Math.max(0, cpuMsOf(pid) - before[i]!), 0) };
}
