import pg from "pg";
import { Logger, makeWorkerUtils, run, type JobHelpers } from "graphile-worker";
import { Completions, Marks, type PeerSide } from "./peer-side.ts";
import { pause } from "./peer-svc.ts";
import { now } from "./stats.ts";

/** Worker slots: the most units the scenario has in flight (16 lanes). */
const CONCURRENCY = 16;

/**
 * A pg client that tells when graphile-worker's completion of a job is acknowledged. The worker
 * does not await it (it fetches its next job meanwhile) and emits no event after it, so "done"
 * is observed here: when the `complete_job` DELETE returns. It changes nothing it passes on.
 */
function completionReportingClient(onCompleted: (ids: string[]) => void) {
  return class CompletionReportingClient extends pg.Client {
    override query(...args: unknown[]): never {
      const result = (pg.Client.prototype.query as (...a: unknown[]) => unknown).apply(this, args);
      const config = args[0] as { name?: string; values?: unknown[] } | undefined;
      const name = typeof config === "object" ? config?.name : undefined;
      if (name && result instanceof Promise) {
        if (name.startsWith("complete_job/")) void result.then(() => onCompleted([String(config!.values![0])]), () => {});
        else if (name.startsWith("complete_jobs/")) void result.then(() => onCompleted((config!.values![0] as unknown[]).map(String)), () => {});
      }
      return result as never;
    }
  };
}

/**
 * graphile-worker 0.18 as its docs set it up for low latency: `run()` in this process with
 * LISTEN/NOTIFY on `jobs:insert` (each insert nudges an idle worker at once; `pollInterval`,
 * left at its 2 s default, only finds future-scheduled and retried jobs), no local queue and no
 * batched completion (both trade latency for throughput), a pool of concurrency + 2. Jobs are
 * added with `WorkerUtils.addJob` on a pool of their own (20 connections, as svc's API).
 * A unit of work is a job whose task returns; there is no durable wait, so the code after a wait
 * is a continuation job that the signal adds.
 */
export async function graphileWorkerSide(url: string): Promise<PeerSide<string>> {
  const completions = new Completions();
  const started = new Marks();
  /** When a chain's first job called addJob for its continuation, by key. */
  const chainSent = new Map<string, number>();
  const chainContinuations = new Map<string, string>();
  const logger = new Logger(() => (level, message) => {
    if (level === "error" || level === "warning") console.error(`graphile-worker ${level}: ${message}`);
  });
  // Job ids arrive as numbers from addJob and as strings in the completion's parameters: compared as strings.
  const workerPool = new pg.Pool({ connectionString: url, max: CONCURRENCY + 2, Client: completionReportingClient((ids) => ids.forEach((id) => completions.done(id))) });
  const addPool = new pg.Pool({ connectionString: url, max: 20 });
  for (const pool of [workerPool, addPool]) {
    pool.on("error", (error) => console.error("graphile-worker pool:", error.message));
    pool.on("connect", (client) => client.on("error", (error) => console.error("graphile-worker client:", error.message)));
  }
  const runner = await run({
    pgPool: workerPool,
    concurrency: CONCURRENCY,
    pollInterval: 2000,
    noHandleSignals: true,
    logger,
    taskList: {
      noop: async () => {},
      continuation: async (payload) => started.reached((payload as { key: string }).key),
      // The chain's first half: its last act is to add the continuation.
      first: async (payload, helpers: JobHelpers) => {
        const { key } = payload as { key: string };
        chainSent.set(key, now());
        const job = await helpers.addJob("continuation", { key });
        chainContinuations.set(key, String(job.id));
      },
    },
  });
  const utils = await makeWorkerUtils({ pgPool: addPool, logger });
  let keys = 0;
  return {
    name: "graphile-worker",
    async runOne() {
      const job = await utils.addJob("noop", {});
      await completions.wait(String(job.id));
    },
    // Nothing waits: the first half has ended, and its state would be in the application's tables.
    waiting: async (count) => Array.from({ length: count }, () => `k${keys++}`),
    async resume(key) {
      const resumed = started.expect(key);
      const job = await utils.addJob("continuation", { key });
      return { resumed, finished: completions.wait(String(job.id)) };
    },
    async extra(n) {
      const samples: number[] = [];
      for (let i = 0; i < n; i++) {
        const key = `c${keys++}`;
        const resumed = started.expect(key);
        const first = await utils.addJob("first", { key });
        const at = await resumed;
        samples.push(at - chainSent.get(key)!);
        await completions.wait(String(first.id));
        await completions.wait(chainContinuations.get(key)!);
        chainSent.delete(key);
        chainContinuations.delete(key);
        await pause();
      }
      return [{ label: "graphile-worker: a job adds its continuation → it starts", samples }];
    },
    async close() {
      await runner.stop();
      await utils.release();
      await workerPool.end();
      await addPool.end();
    },
  };
}
