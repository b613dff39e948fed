import { collectDefaultMetrics, Counter, Histogram, Registry } from "prom-client";
import { registerPoolGauges, type Pool } from "@svc/runtime/db";
import type { Clock } from "@svc/runtime/engine";
import { registerDatabaseGauges } from "./database-gauges.ts";

/** Buckets of svc_http_request_duration_seconds (seconds). */
export const HTTP_DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The API process's metrics: one registry of its own (not prom-client's global one), built at the entry point. */
export interface ApiMetrics {
  registry: Registry;
  /** When set, GET /metrics requires `Authorization: Bearer <token>` (METRICS_TOKEN). */
  token?: string;
  /** Runs this process created: triggers, batches, replays, session runs (workers count the runs they create in their own registry). */
  runsTriggered: Counter<never>;
  /** Runs this process ended (cancels: CANCELED). */
  runsFinished: Counter<"status">;
  httpDuration: Histogram<"method" | "route" | "status">;
}

export interface ApiMetricsOptions {
  pool: Pool;
  clock: Clock;
  token?: string;
  /** The process metrics of prom-client (CPU, memory, event loop lag, GC); default true. */
  defaultMetrics?: boolean;
}

export function createApiMetrics(options: ApiMetricsOptions): ApiMetrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  registerDatabaseGauges(registry, options.pool, options.clock);
  registerPoolGauges(registry, options.pool);
  return {
    registry,
    ...(options.token ? { token: options.token } : {}),
    runsTriggered: new Counter({ name: "svc_runs_triggered_total", help: "Runs this API process created: triggers, batches and their items, replays, session runs (never one an idempotency key found)", registers: [registry] }),
    runsFinished: new Counter({ name: "svc_runs_finished_total", help: "Runs this process ended, by final status (the API: cancels)", labelNames: ["status"] as const, registers: [registry] }),
    httpDuration: new Histogram({
      name: "svc_http_request_duration_seconds",
      help: "HTTP requests answered, by method, route template and status",
      labelNames: ["method", "route", "status"] as const,
      buckets: HTTP_DURATION_BUCKETS,
      registers: [registry],
    }),
  };
}
