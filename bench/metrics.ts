import { spawn } from "node:child_process";
import { systemClock } from "../packages/runtime/src/engine/index.ts";
import { createWorkerMetrics } from "../packages/worker/src/metrics/worker-metrics.ts";
import { completeOverHttp, markFor, settle, suspendedRuns, waiter } from "./resume-latency.ts";
import { benchDatabase, benchStack, spawnApiProcess } from "./setup.ts";
import { createApiMetrics } from "../packages/api/src/metrics/api-metrics.ts";
import { WorkerEvents } from "../packages/worker/src/events.ts";
import type { Worker } from "../packages/worker/src/worker.ts";
import type { Pool } from "../packages/runtime/src/db/index.ts";

import { line, now, percentiles, fmt } from "./stats.ts";

/**
 * What metrics cost on the resume path: the one-at-a-time HTTP /complete → code measurement of the
 * resume scenario, with metrics on and off interleaved in blocks of `block` resumes on one database
 * and one worker, so that both sides see the same machine at the same time (this machine's speed
 * drifts by more than the difference measured). Two API processes serve the same database: the
 * API as shipped (metrics on, scraped every `scrapeMs`) and `bench/api-without-metrics.ts`; a block
 * completes its tokens through one of them. The in-process worker's metric listeners (finished
 * counter, resume-latency histogram) are attached for the "on" blocks only; its default process
 * metrics (prom-client's collectors) stay on throughout, for both sides.
 */
export async function metricsScenario(embedded: { url: string } | undefined, rounds: number, n: number, warmUp: number, scrapeMs: number, control = false) {
  const block = 100;
  const db = await benchDatabase("metrics", embedded);
  // The control (BENCH_METRICS_CONTROL=1) runs the "on" side without metrics too: what two
  // identical API processes differ by on this machine.
  const stack = await benchStack(db.url, { tasks: [waiter], api: true, concurrency: 50, ...(control ? { apiMain: "bench/api-without-metrics.ts" } : {}) });
  const off = await spawnApi(db.url, "bench/api-without-metrics.ts");
  // The worker's registry with its default process metrics, scraped throughout; its listeners are
  // detached at once (the "on" blocks attach their own).
  const processMetrics = createWorkerMetrics(stack.worker!, { pool: stack.pool, clock: systemClock });
  processMetrics.stop();
  const apis = { on: stack.apiUrl!, off: off.url };
  let scrapes = 0;
  const scraper = setInterval(() => {
    void Promise.all([processMetrics.registry.metrics(), control ? null : fetch(`${stack.apiUrl}/metrics`).then((r) => r.text())]).then(() => scrapes++, (error) => console.error("scrape failed:", error));
  }, scrapeMs);
  const resumeOne = async (token: string, api: string) => {
    const m = markFor(token);
    const finished = stack.worker!.events.next("runFinished");
    const t0 = now();
    await completeOverHttp({ ...stack, apiUrl: api }, token);
    const at = await m;
    await settle(finished);
    return at - t0;
  };
  const samples = { off: [] as number[], on: [] as number[] };
  const out = [`## Metrics cost on the resume path${control ? " — CONTROL: both sides without metrics" : ""}: HTTP /complete → code, one at a time (${rounds} rounds × ${n} waits per side in blocks of ${block}, on and off alternating, after ${warmUp} warm-up resumes per side; the metrics API scraped every ${scrapeMs} ms)`];
  try {
    for (const mode of ["off", "on"] as const) for (const t of await suspendedRuns(stack, warmUp)) await resumeOne(t, apis[mode]);
    for (let round = 0; round < rounds; round++) {
      const tokens = await suspendedRuns(stack, 2 * n);
      const round_ = { off: [] as number[], on: [] as number[] };
      for (let b = 0; b * block < tokens.length; b++) {
        const mode = (b + round) % 2 === 0 ? "off" : "on";
        const listeners = mode === "on" && !control ? createWorkerMetrics(stack.worker!, { pool: stack.pool, clock: systemClock, defaultMetrics: false }) : null;
        for (const t of tokens.slice(b * block, (b + 1) * block)) round_[mode].push(await resumeOne(t, apis[mode]));
        listeners?.stop();
      }
      for (const mode of ["off", "on"] as const) {
        samples[mode].push(...round_[mode]);
        out.push(line(`  round ${round + 1}, metrics ${mode}`, percentiles(round_[mode])));
      }
    }
  } finally {
    clearInterval(scraper);
    off.kill();
    await stack.close();
    await db.close();
  }
  const offP = percentiles(samples.off);
  const onP = percentiles(samples.on);
  out.push(line("all rounds, metrics off", offP));
  out.push(line("all rounds, metrics on", onP));
  out.push(`on / off: p50 ${fmt((onP.p50 / offP.p50 - 1) * 100)} %, p90 ${fmt((onP.p90 / offP.p90 - 1) * 100)} %, p99 ${fmt((onP.p99 / offP.p99 - 1) * 100)} % (${scrapes} scrapes)`);
  out.push(...perResumeWork());
  return out;
}

/** A second API process on `url` (another entry point), ready once /readyz answers. */
async function spawnApi(url: string, entry: string): Promise<{ url: string; kill(): void }> {
  const { url: apiUrl, child } = await spawnApiProcess(url, entry);
  return { url: apiUrl, kill: () => child.kill("SIGTERM") };
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
  const resumed = { runId: "run_x", attempt: 1, replayedEntries: 1, via: "offer" as const, ledgerFrom: "offer" as const, waitResolvedAt: new Date() };
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
