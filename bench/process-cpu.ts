import { readdirSync, readFileSync } from "node:fs";
import type pg from "pg";

const TICK_MS = 10; // USER_HZ is 100 on Linux (`getconf CLK_TCK`)

/** Fields 14–17 (utime, stime, cutime, cstime) and 4 (ppid) of /proc/<pid>/stat, times in ms; null when it is gone. */
function statOf(pid: number | "self"): { own: number; children: number; ppid: number } | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // Fields after the command name (which may hold spaces, so split after its closing parenthesis).
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const n = (field: number) => Number(fields[field - 3]);
  return { own: (n(14) + n(15)) * TICK_MS, children: (n(16) + n(17)) * TICK_MS, ppid: n(4) };
}

/** CPU time (user + system, ms) a process has used so far, from /proc/<pid>/stat; 0 when it is gone. */
export function cpuMsOf(pid: number): number {
  return statOf(pid)?.own ?? 0;
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

/** CPU time in ms of the benchmark process, the API process and a whole Postgres server. */
export interface CpuTimes {
  bench: number;
  api: number;
  postgres: number;
}

/**
 * Read from /proc, so only for processes on this machine. Postgres is the postmaster with every
 * backend and auxiliary process it forked: the live ones' own time plus what the postmaster has
 * reaped of the ended ones (its children's time). The benchmark process holds the worker and the
 * load driver (the HTTP client) together.
 */
export function cpuTimes(pids: { api?: number; postmaster?: number }): CpuTimes {
  let postgres = 0;
  if (pids.postmaster) {
    const master = statOf(pids.postmaster);
    postgres = master ? master.own + master.children : 0;
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const child = statOf(Number(entry));
      if (child?.ppid === pids.postmaster) postgres += child.own;
    }
  }
  return { bench: statOf("self")?.own ?? 0, api: pids.api ? cpuMsOf(pids.api) : 0, postgres };
}

export function cpuSpent(before: CpuTimes, after: CpuTimes): CpuTimes {
  return { bench: after.bench - before.bench, api: after.api - before.api, postgres: after.postgres - before.postgres };
}
