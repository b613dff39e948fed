import { systemClock } from "../packages/runtime/src/engine/index.ts";
import { createWorkerMetrics } from "../packages/worker/src/metrics/worker-metrics.ts";
import { completeOverHttp, markFor, settle, suspendedRuns, waiter } from "./resume-latency.ts";
import { benchDatabase, benchStack } from "./setup.ts";
import { createApiMetrics } from "../packages/api/src/metrics/api-metrics.ts";
import { WorkerEvents } from "../packages/worker/src/events.ts";
import type { Worker } from "../packages/worker/src/worker.ts";
import type { Pool } from "../packages/runtime/src/db/index.ts";
import { line, now, percentiles, fmt } from "./stats.ts";

/**
 * What metrics cost on the resume path: the one-at-a-time HTTP /complete → code measurement of the
 * resume scenario, with metrics off (an API process without them, a worker without listeners) and
 * on (the API as shipped, the worker's metrics listening to its events, both scraped every
 * `scrapeMs` — far more often than Prometheus' usual 15 s, so the scrapes' own cost shows). Rounds
 * alternate off/on (and which goes first), each on a fresh database and fresh processes.
 */
export async function metricsScenario(embedded: { url: string } | undefined, rounds: number, n: number, warmUp: number, scrapeMs: number) {
  const samples = { off: [] as number[], on: [] as number[] };
  const out = [`## Metrics cost on the resume path: HTTP /complete → code, one at a time (${rounds} rounds × ${n} waits per side, after ${warmUp} warm-up resumes each; on = scraped every ${scrapeMs} ms)`];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const);
    for (const mode of order) {
      const db = await benchDatabase(`metrics_${mode}`, embedded);
      const stack = await benchStack(db.url, { tasks: [waiter], api: true, concurrency: 50, ...(mode === "off" ? { apiMain: "bench/api-without-metrics.ts" } : {}) });
      const metrics = mode === "on" ? createWorkerMetrics(stack.worker!, { pool: stack.pool, clock: systemClock }) : null;
      let scrapes = 0;
      const scraper = metrics
        ? setInterval(() => {
            void Promise.all([metrics.registry.metrics(), fetch(`${stack.apiUrl}/metrics`).then((r) => r.text())]).then(() => scrapes++, (error) => console.error("scrape failed:", error));
          }, scrapeMs)
        : null;
      const resumeOne = async (token: string) => {
        const m = markFor(token);
        const finished = stack.worker!.events.next("runFinished");
        const t0 = now();
        await completeOverHttp(stack, token);
        const at = await m;
        await settle(finished);
        return at - t0;
      };
      for (const t of await suspendedRuns(stack, warmUp)) await resumeOne(t);
      const measured: number[] = [];
      for (const t of await suspendedRuns(stack, n)) measured.push(await resumeOne(t));
      if (scraper) clearInterval(scraper);
      metrics?.stop();
      samples[mode].push(...measured);
      out.push(line(`  round ${round + 1}, metrics ${mode}${mode === "on" ? ` (${scrapes} scrapes)` : ""}`, percentiles(measured)));
      await stack.close();
      await db.close();
    }
  }
  const off = percentiles(samples.off);
  const on = percentiles(samples.on);
  out.push(line("all rounds, metrics off", off));
  out.push(line("all rounds, metrics on", on));
  out.push(`on / off: p50 ${fmt((on.p50 / off.p50 - 1) * 100)} %, p90 ${fmt((on.p90 / off.p90 - 1) * 100)} %, p99 ${fmt((on.p99 / off.p99 - 1) * 100)} %`);
  out.push(...perResumeWork());
  return out;
}

/**
 * The work metrics add to one resume, without the noise of a whole resume around it: the worker's
 * listeners on runResumed and runFinished (a histogram observation, a counter increment), and the
 * API's request timing (one labelled histogram observation per request), timed over many calls.
 */
function perResumeWork(): string[] {
  const n = 200_000;
  const time = (fn: () => void) => {
    for (let i = 0; i < 10_000; i++) fn();
    const t0 = now();
    for (let i = 0; i < n; i++) fn();
    return ((now() - t0) / n) * 1e6;
  };
  const events = new WorkerEvents();
  const worker = { events, concurrency: 1, slotsInUse: () => 0 } as unknown as Worker;
  const resumed = { runId: "run_x", attempt: 1, replayedEntries: 1, via: "offer" as const, waitResolvedAt: new Date() };
  const finished = { runId: "run_x", status: "COMPLETED" };
  const emit = () => {
    events.emit("runResumed", resumed);
    events.emit("runFinished", finished);
  };
  const bare = time(emit);
  const metrics = createWorkerMetrics(worker, { pool: { totalCount: 0, idleCount: 0, waitingCount: 0, options: {} } as unknown as Pool, clock: systemClock, defaultMetrics: false });
  const listened = time(emit);
  metrics.stop();
  const api = createApiMetrics({ pool: {} as unknown as Pool, clock: systemClock, defaultMetrics: false });
  const labels = { method: "POST", route: "/api/v1/waitpoints/tokens/:waitpointId/complete", status: "200" };
  const observe = time(() => api.httpDuration.observe(labels, 0.0012));
  return [
    `per resume: worker events with metrics listening ${fmt(listened)} ns, without ${fmt(bare)} ns (+${fmt(listened - bare)} ns); ` +
      `the API's timing of the /complete request ${fmt(observe)} ns`,
  ];
}
