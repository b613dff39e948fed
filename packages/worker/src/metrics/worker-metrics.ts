import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { registerPoolGauges, type Pool } from "@svc/runtime/db";
import type { Clock } from "@svc/runtime/engine";
import type { Worker } from "../worker.ts";

/**
 * Buckets of svc_resume_latency_seconds: a resume takes ~1–3 ms through an offer or the fast path,
 * up to a poll interval when its NOTIFY was lost, and as long as a slot of a limited queue takes.
 */
export const RESUME_LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export interface WorkerMetrics {
  /** This process's registry (not prom-client's global one): what GET /metrics serves. */
  registry: Registry;
  /** Stops listening to the worker's events. */
  stop(): void;
}

/**
 * The worker's metrics, in a registry of its own: counted from the worker's events (no call on the
 * execution path), the slot and pool gauges read when scraped, and the default process metrics.
 */
export function createWorkerMetrics(worker: Worker, options: { pool: Pool; clock: Clock; defaultMetrics?: boolean }): WorkerMetrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  // The same names as the API's counters: each process counts what it did, Prometheus sums them.
  const triggered = new Counter({
    name: "svc_runs_triggered_total",
    help: "Runs this worker created: child runs of triggerAndWait/batchTriggerAndWait, scheduled runs its timers fired, a session's next run handed over from task code",
    registers: [registry],
  });
  const finished = new Counter({
    name: "svc_runs_finished_total",
    help: "Runs this worker ended, by final status: its executions' COMPLETED, FAILED, CRASHED, TIMED_OUT; its timers' EXPIRED and CRASHED (a lapsed lease)",
    labelNames: ["status"] as const,
    registers: [registry],
  });
  const resumeLatency = new Histogram({
    name: "svc_resume_latency_seconds",
    help: "From the completion of the waitpoint a run waited on to its code running again on this worker",
    buckets: RESUME_LATENCY_BUCKETS,
    registers: [registry],
  });
  const givenBack = new Counter({
    name: "svc_offers_given_back_total",
    help: "Resume offers this worker gave back without running them, by reason: full (no free slot) or draining; another worker claims the run",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  const rateDelayed = new Counter({
    name: "svc_runs_rate_delayed_total",
    help: "Runs of a rate-limited queue that this worker's claims were the first to leave QUEUED for their rate key's slot, per queue (each run counted once, by one worker)",
    labelNames: ["queue"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "svc_worker_slots_in_use",
    help: "Concurrency slots of this worker taken by executing runs",
    registers: [registry],
    collect() {
      this.set(worker.slotsInUse());
    },
  });
  new Gauge({
    name: "svc_worker_slots",
    help: "Concurrency slots of this worker (WORKER_CONCURRENCY)",
    registers: [registry],
    collect() {
      this.set(worker.concurrency);
    },
  });
  registerPoolGauges(registry, options.pool);
  const offs = [
    worker.events.on("runFinished", (e) => finished.inc({ status: e.status })),
    worker.events.on("runsEnded", (e) => finished.inc({ status: e.status }, e.count)),
    worker.events.on("runsTriggered", (e) => triggered.inc(e.count)),
    worker.events.on("offerGivenBack", (e) => givenBack.inc({ reason: e.reason })),
    worker.events.on("rateLimited", (e) => {
      if (e.newlyDelayed > 0) rateDelayed.inc({ queue: e.queue }, e.newlyDelayed);
    }),
    worker.events.on("runResumed", (e) => {
      if (e.waitResolvedAt) resumeLatency.observe(Math.max(0, options.clock.now().getTime() - e.waitResolvedAt.getTime()) / 1000);
    }),
  ];
  return { registry, stop: () => offs.forEach((off) => off()) };
}
