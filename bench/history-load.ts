import { fireAllDue, realPaceTimer, runRetention, type PaceTimer } from "../packages/runtime/src/engine/index.ts";
import { task } from "../packages/runtime/src/sdk/index.ts";
import { postJson } from "./http-client.ts";
import { resumesOverHttp, suspendedRuns, waiter } from "./resume-latency.ts";
import { benchStack, type BenchStack } from "./setup.ts";
import { fmt, line, now, percentiles, rate } from "./stats.ts";

const loadNoop = task({ id: "bench-history-noop", run: async () => 1 });

/**
 * A trigger+resume load while `running()`: one lane triggering `bench-history-noop` over HTTP one
 * at a time (trigger sent → 200), one lane completing the `tokens` (runs suspended beforehand)
 * over HTTP one at a time (completion sent → the code after the wait). Should they run out, more
 * are suspended, 300 at a time: a burst of work that is the benchmark's, not the load's, so the
 * triggers that overlap it are counted apart (`toppedUp`), not in `triggers`.
 */
async function load(stack: BenchStack, tokens: string[], running: () => boolean) {
  const key = stack.project.environments.dev.secretKey;
  const triggers: number[] = [];
  const resumes: number[] = [];
  let toppingUp = false;
  const toppedUp: number[] = [];
  const triggering = (async () => {
    while (running()) {
      const overlapped = toppingUp;
      const t0 = now();
      const res = await postJson(`${stack.apiUrl}/api/v1/tasks/bench-history-noop/trigger`, '{"payload":{}}', { authorization: `Bearer ${key}` });
      if (res.status !== 200) throw new Error(`trigger failed: ${res.status} ${res.text}`);
      (overlapped || toppingUp ? toppedUp : triggers).push(now() - t0);
    }
  })();
  const resuming = (async () => {
    resumes.push(...(await resumesOverHttp(stack, tokens, running)).http);
    while (running()) {
      toppingUp = true;
      const more = await suspendedRuns(stack, 300);
      toppingUp = false;
      resumes.push(...(await resumesOverHttp(stack, more, running)).http);
    }
  })();
  await Promise.all([triggering, resuming]);
  return { triggers, resumes, toppedUp };
}

/** The first and the second half of a series of samples, in the order they were taken. */
function halves(xs: number[]): [number[], number[]] {
  const mid = Math.floor(xs.length / 2);
  return [xs.slice(0, mid), xs.slice(mid)];
}

/** The real pace timer, noting how long the batches took and the rests after them. */
function timedPace(): PaceTimer & { batchMs: number; restMs: number; batches: number } {
  let last = 0;
  const timer = {
    batchMs: 0,
    restMs: 0,
    batches: 0,
    elapsedMs() {
      const t = realPaceTimer.elapsedMs();
      // Readings come in pairs around each batch: the second of a pair closes the batch.
      if (last > 0) {
        timer.batchMs += t - last;
        timer.batches += 1;
        last = 0;
      } else last = t;
      return t;
    },
    async rest(ms: number, signal?: AbortSignal) {
      timer.restMs += ms;
      await realPaceTimer.rest(ms, signal);
    },
  };
  return timer;
}

/**
 * Retention deleting about a day of the preloaded history (runs older than `days`) while the load
 * runs, against the same load for `seconds` just before it without a sweep. The goal: trigger and
 * resume p99 within 20 % of the load without the sweep.
 */
export async function retentionUnderLoad(url: string, options: { days: number; seconds: number; sweepSeconds: number; batchSize: number; restRatio: number }): Promise<string[]> {
  const stack = await benchStack(url, { tasks: [waiter, loadNoop], api: true, concurrency: 100 });
  try {
    // Warm-up: the API's and the worker's paths compiled, pools opened.
    let until = now() + 5_000;
    await load(stack, await suspendedRuns(stack, 1_000), () => now() < until);
    const quietTokens = await suspendedRuns(stack, options.seconds * 300);
    until = now() + options.seconds * 1000;
    const quiet = await load(stack, quietTokens, () => now() < until);
    // Enough suspended runs for the resume lane to last the sweep, where its length is known.
    const duringTokens = await suspendedRuns(stack, options.sweepSeconds > 0 ? options.sweepSeconds * 300 : options.seconds * 600);

    const pace = timedPace();
    const work = runRetention({ defaultDays: options.days, intervalMs: 600_000, batchSize: options.batchSize, restRatio: options.restRatio, paceTimer: pace });
    // Due now, whichever sweep came before (each pace deletes one more day, and what an earlier
    // pace stopped short of).
    await stack.pool.query(`UPDATE retention_sweeps SET due_at = '-infinity'`);
    let sweeping = true;
    const stop = new AbortController();
    const limit = options.sweepSeconds > 0 ? setTimeout(() => stop.abort(), options.sweepSeconds * 1000) : undefined;
    const t0 = now();
    const sweep = fireAllDue(stack.engine, new Date(), [work], { signal: stop.signal }).finally(() => {
      sweeping = false;
      clearTimeout(limit);
    });
    const during = await load(stack, duringTokens, () => sweeping);
    const deleted = (await sweep)["run-retention"] ?? 0;
    const sweepMs = now() - t0;
    const p99 = (a: number[]) => percentiles(a).p99;
    const ratio = (a: number[], b: number[]) => (p99(b) / p99(a)).toFixed(2);
    return [
      `### Retention deleting runs older than ${options.days} days (${options.batchSize} runs per statement, a rest of ${options.restRatio}× each batch's time) under a trigger + resume load`,
      `deleted ${deleted.toLocaleString("en-US")} runs in ${(sweepMs / 1000).toFixed(1)} s${stop.signal.aborted ? ` (stopped after ${options.sweepSeconds} s)` : ""} (${rate(deleted, sweepMs)}, ${((deleted / sweepMs) * 86.4).toFixed(1)} M runs/day); the load alone measured for ${options.seconds} s just before`,
      `  ${pace.batches} batches of ${(pace.batchMs / Math.max(1, pace.batches)).toFixed(1)} ms on average, rests ${(pace.restMs / 1000).toFixed(1)} s in all (the sweep busy ${((100 * pace.batchMs) / sweepMs).toFixed(0)} % of its time)`,
      line("  trigger over HTTP, without the sweep", percentiles(quiet.triggers)),
      line("  trigger over HTTP, during the sweep", percentiles(during.triggers)),
      `  (left out: triggers made while the resume lane suspended 300 more runs, ${quiet.toppedUp.length} without the sweep and ${during.toppedUp.length} during it; with them the p99 were ${fmt(p99([...quiet.triggers, ...quiet.toppedUp]))} and ${fmt(p99([...during.triggers, ...during.toppedUp]))} ms)`,
      line("  resume HTTP → code, without the sweep", percentiles(quiet.resumes)),
      line("  resume HTTP → code, during the sweep", percentiles(during.resumes)),
      `  p99 during ÷ without (goal ≤ 1.20): trigger ${ratio(quiet.triggers, during.triggers)}, resume ${ratio(quiet.resumes, during.resumes)}`,
      `  (the noise: p99 of the load alone, its second half ÷ its first: trigger ${ratio(...halves(quiet.triggers))}, resume ${ratio(...halves(quiet.resumes))})`,
    ];
  } finally {
    await stack.close();
  }
}
