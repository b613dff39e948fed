import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startEmbeddedPostgres } from "../scripts/embedded-postgres.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

export interface OwnPostgres {
  url: string;
  /** The postmaster's pid, for its CPU time (bench/process-cpu.ts). */
  postmaster: number;
  settings: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * A Postgres server of the benchmark's own (embedded-postgres, its data in `.svc/<name>-pg`,
 * removed when stopped), for the scenarios that need autovacuum: the shared machine's server may
 * run without it and is not to be reconfigured. Autovacuum is on (Postgres's default, said
 * explicitly); `BENCH_PG_SHARED_BUFFERS` and `BENCH_PG_MAX_WAL_SIZE` override the two sizes.
 */
export async function startOwnPostgres(name: string): Promise<OwnPostgres> {
  const settings = {
    autovacuum: "on",
    shared_buffers: process.env.BENCH_PG_SHARED_BUFFERS ?? "256MB",
    max_wal_size: process.env.BENCH_PG_MAX_WAL_SIZE ?? "4GB",
    maintenance_work_mem: "512MB",
  };
  const server = await startEmbeddedPostgres(`${ROOT}.svc/${name}-pg`, { persistent: false, settings });
  const postmaster = Number(readFileSync(`${server.dataDir}/postmaster.pid`, "utf8").split("\n")[0]);
  return { url: server.url, postmaster, settings, stop: server.stop };
}
