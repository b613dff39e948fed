import { fireAllDue, getProjectByRef, runRetention, triggerRun, type EnvironmentSweep } from "../packages/runtime/src/engine/index.ts";
import { preloadAttempts, preloadLedgerSteps, preloadRuns } from "./run-list-preload.ts";
import { benchDatabase, benchStack } from "./setup.ts";
import { settle } from "./settle.ts";
import { line, now, percentiles, rate } from "./stats.ts";

const DAY = 86_400_000;

/**
 * The retention sweep over a database of old runs: `runs` runs of one environment and a fifth as
 * many in another (bench/run-list-preload.ts: batches, child runs, session runs, waiting runs),
 * all created 31–61 days ago, each started run with its attempt and each finished one with two
 * steps in its ledger. With the default retention of 30 days every finished run is due; waiting
 * runs, the current runs of the (active) sessions and the runs of the last day that are still
 * queued or executing are kept. Measures how fast one worker deletes them (`batchSize` runs per
 * statement, resting `restRatio` times each batch's time after it), and what triggers cost meanwhile: one trigger at a time through the engine, before
 * the sweep and during it.
 */
export async function retentionScenario(embedded: { url: string } | undefined, options: { runs: number; batchSize: number; restRatio: number; triggers: number }): Promise<string[]> {
  const db = await benchDatabase("retention", embedded);
  const stack = await benchStack(db.url, { poolMax: 10 });
  try {
    const pool = stack.pool;
    const main = stack.project.environments.dev;
    const other = stack.project.environments.prod;
    const project = await getProjectByRef(pool, stack.project.projectRef);
    let t0 = now();
    await preloadRuns(pool, { mainEnvironmentId: main.id, otherEnvironmentId: other.id, projectId: project.id, runs: options.runs, days: 30, now: new Date(Date.now() - 31 * DAY) });
    await preloadAttempts(pool);
    await preloadLedgerSteps(pool);
    const loadMs = now() - t0;
    for (const table of ["runs", "run_attempts", "run_ledger", "batches", "waitpoints", "sessions", "session_runs"]) await pool.query(`VACUUM ANALYZE ${table}`);
    const unsettled = await settle(db.adminUrl);
    const before = await rowCounts(pool);

    const trigger = async (label: string) => {
      const t = now();
      await triggerRun(stack.engine, stack.env, "bench-retention", { label });
      return now() - t;
    };
    const quiet: number[] = [];
    for (let i = 0; i < options.triggers; i++) quiet.push(await trigger("before"));

    const sweeps: EnvironmentSweep[] = [];
    const work = runRetention({ defaultDays: 30, intervalMs: 600_000, batchSize: options.batchSize, restRatio: options.restRatio, onSwept: (s) => sweeps.push(s) });
    let sweeping = true;
    const during: number[] = [];
    t0 = now();
    const sweep = fireAllDue(stack.engine, new Date(), [work]).finally(() => (sweeping = false));
    const triggers = (async () => {
      while (sweeping) during.push(await trigger("during"));
    })();
    await sweep;
    const sweepMs = now() - t0;
    await triggers;
    const after = await rowCounts(pool);
    const deleted = sweeps.reduce((sum, s) => sum + s.deleted.runs, 0);
    const batches = Math.ceil(before.oldRuns / options.batchSize);
    const sizes = await pool.query<{ runs: string; ledger: string }>(
      `SELECT pg_size_pretty(pg_total_relation_size('runs')) AS runs, pg_size_pretty(pg_total_relation_size('run_ledger')) AS ledger`,
    );
    const kinds = sweeps.reduce<Record<string, number>>((sum, s) => {
      for (const [k, v] of Object.entries(s.deleted)) sum[k] = (sum[k] ?? 0) + v;
      return sum;
    }, {});
    return [
      `retention: ${before.runs.toLocaleString("en-US")} runs created 31–61 days ago (${options.runs.toLocaleString("en-US")} + a fifth in a second environment; loaded in ${(loadMs / 1000).toFixed(1)} s), ${before.attempts.toLocaleString("en-US")} attempts, ${before.ledger.toLocaleString("en-US")} ledger rows; retention 30 days, ${options.batchSize} runs per statement, a rest of ${options.restRatio}× each batch's time after it, one worker`,
      `  deleted ${deleted.toLocaleString("en-US")} runs in ${(sweepMs / 1000).toFixed(1)} s: ${rate(deleted, sweepMs)} (≈ ${(sweepMs / batches).toFixed(0)} ms per batch of ${options.batchSize} looked at, its rest included); with them ${Object.entries(kinds).filter(([k, v]) => k !== "runs" && v > 0).map(([k, v]) => `${v.toLocaleString("en-US")} ${k}`).join(", ")}`,
      `  kept ${after.runs.toLocaleString("en-US")} runs (waiting, still queued or executing, a session's current run) and the ${options.triggers + during.length} triggered here; runs ${sizes.rows[0]!.runs}, run_ledger ${sizes.rows[0]!.ledger} after (space is reused once vacuumed, not returned)`,
      line("  trigger before the sweep (one at a time)", percentiles(quiet)),
      line("  trigger during the sweep (one at a time)", percentiles(during)),
      ...(unsettled ? [unsettled] : []),
    ];
  } finally {
    await stack.close();
    await db.close();
  }
}

async function rowCounts(pool: import("pg").Pool) {
  const { rows } = await pool.query<{ runs: number; attempts: number; ledger: number; oldRuns: number }>(
    `SELECT (SELECT count(*) FROM runs)::int AS runs, (SELECT count(*) FROM run_attempts)::int AS attempts, (SELECT count(*) FROM run_ledger)::int AS ledger,
            (SELECT count(*) FROM runs WHERE created_at < now() - interval '30 days')::int AS "oldRuns"`,
  );
  return rows[0]!;
}
