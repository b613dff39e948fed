import { Gauge, type Registry } from "prom-client";
import type { Pool } from "./queryable.ts";

/** svc_db_pool_connections{state}, svc_db_pool_waiting and svc_db_pool_max of a process's main pool, read when scraped (API and worker). */
export function registerPoolGauges(registry: Registry, pool: Pool): void {
  new Gauge({
    name: "svc_db_pool_connections",
    help: "Connections of the process's Postgres pool: in_use (checked out) or idle",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      this.set({ state: "in_use" }, pool.totalCount - pool.idleCount);
      this.set({ state: "idle" }, pool.idleCount);
    },
  });
  new Gauge({
    name: "svc_db_pool_waiting",
    help: "Queries waiting for a connection of the process's Postgres pool",
    registers: [registry],
    collect() {
      this.set(pool.waitingCount);
    },
  });
  new Gauge({
    name: "svc_db_pool_max",
    help: "The most connections the process's Postgres pool opens (DB_POOL_MAX)",
    registers: [registry],
    collect() {
      this.set(pool.options.max ?? 10);
    },
  });
}
