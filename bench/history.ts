import pg from "pg";
import { createPool } from "../packages/runtime/src/db/index.ts";
import { getProjectByRef } from "../packages/runtime/src/engine/index.ts";
import { explainSlowReads } from "./history-explain.ts";
import { retentionUnderLoad } from "./history-load.ts";
import { readCases, timeReads } from "./history-reads.ts";
import { startOwnPostgres } from "./own-postgres.ts";
import type { CpuTimes } from "./process-cpu.ts";
import { resumesOverHttp, suspendedRuns, waiter } from "./resume-latency.ts";
import { preloadAttempts, preloadRuns, preloadTokens } from "./run-list-preload.ts";
import { benchDatabaseOn, benchStack } from "./setup.ts";
import { settle } from "./settle.ts";
import { fmt, median, now, percentiles } from "./stats.ts";
import { fullPageImagesByRelation, walPosition } from "./wal-sources.ts";
import { bytesReport, tableBytes } from "./table-bytes.ts";
import { svcBatched, svcOneByOne, type Timing } from "./throughput.ts";
import { timeoutLateness, timeoutWaiter } from "./timeouts.ts";

export interface HistoryOptions {
  /** Runs preloaded in all (the listed environment holds five sixths of them). */
  runs: number;
  /** Measurement rounds on the loaded database, each followed by one on the empty database. */
  repeat: number;
  batched: number;
  oneByOne: number;
  waits: number;
  timeouts: number;
  samples: number;
  pages: number;
  /** Retention under load: runs older than this are deleted (the history spans 30 days). */
  retentionDays: number;
  loadSeconds: number;
  /**
   * The sweep's paces to measure under load, one after the other, each deleting one more day of
   * history (runs older than retentionDays, then a day younger …), each against the load alone
   * just before it.
   */
  retentionPaces: { batchSize: number; restRatio: number }[];
  /** Stop each pace's sweep after this many seconds (0: let it delete its whole day). */
  sweepSeconds: number;
  /** Only the preload and retention under load: no rounds on the empty and loaded databases. */
  retentionOnly: boolean;
}

interface Figures {
  /** WAL written per run in the batched round (warm-up included), and full-page images per run. */
  wal: { bytes: number; fpi: number };
  /** What the server did besides the round's own work while the batched round ran. */
  background: string;
  /** The relations whose full-page images the batched round and the timed resumes wrote, most first. */
  fullPages: { batched: string; resumes: string };
  batched: Timing;
  oneByOne: Timing;
  resume: number[];
  timeouts: number[];
  reads: Map<string, number[]>;
}

const GOAL_READ_MS = 20;

/** One round of every measurement against the database at `url` (svc's stacks in its default project). */
async function measure(url: string, o: HistoryOptions, postmaster: number, reads: { loadedAt: Date; preloaded: number }): Promise<Figures> {
  const phase = (name: string) => console.error(`history ${new Date().toISOString()}: ${reads.preloaded ? "loaded" : "empty"} database, ${name}`);
  phase("batched triggers");
  const before = await serverStats(url);
  const from = await walPosition(url);
  const batched = await svcBatched({ url }, o.batched, 500, 2_000, postmaster);
  const to = await walPosition(url);
  const after = await serverStats(url);
  const batchedPages = await fullPageImagesByRelation(url, from, to);
  const wal = { bytes: (after.bytes - before.bytes) / (o.batched + 2_000), fpi: (after.fpi - before.fpi) / (o.batched + 2_000) };
  const background = describeBackground(before, after);
  phase("one-by-one triggers");
  const oneByOne = await svcOneByOne({ url }, o.oneByOne, 16, 500, postmaster);
  const stack = await benchStack(url, { tasks: [waiter, timeoutWaiter], api: true, concurrency: 100 });
  try {
    phase("resumes");
    await resumesOverHttp(stack, await suspendedRuns(stack, 300));
    const suspended = await suspendedRuns(stack, o.waits);
    const resumesFrom = await walPosition(url);
    const resume = (await resumesOverHttp(stack, suspended)).http;
    const fullPages = { batched: batchedPages, resumes: await fullPageImagesByRelation(url, resumesFrom, await walPosition(url)) };
    phase("timeouts");
    const timeouts = await timeoutLateness(stack, o.timeouts);
    phase("reads");
    const cases = await readCases(stack, { ...reads, pages: o.pages });
    return { wal, background, fullPages, batched, oneByOne, resume, timeouts, reads: await timeReads(cases, o.samples) };
  } finally {
    await stack.close();
  }
}

/** The preload: runs, an attempt per started run, a token with its ledger entry in one finished run in ten. */
async function preload(url: string, runs: number) {
  const stack = await benchStack(url, { poolMax: 4 });
  try {
    const pool = stack.pool;
    const project = await getProjectByRef(pool, stack.project.projectRef);
    // Runs of the listed environment: a multiple of 500, so that with a fifth as many in the other the total is `runs`.
    const main = Math.round((runs * 5) / 6 / 500) * 500;
    const loadedAt = new Date();
    const steps: string[] = [];
    const step = async (name: string, fn: () => Promise<unknown>) => {
      const t0 = now();
      await fn();
      steps.push(`${name} ${((now() - t0) / 1000).toFixed(0)} s`);
    };
    const t0 = now();
    await step("runs", () => preloadRuns(pool, { mainEnvironmentId: stack.project.environments.dev.id, otherEnvironmentId: stack.project.environments.prod.id, projectId: project.id, runs: main, days: 30, now: loadedAt }));
    await step("attempts", () => preloadAttempts(pool));
    await step("tokens and their ledger entries", () => preloadTokens(pool, 10));
    const loadMs = now() - t0;
    await step("VACUUM ANALYZE", async () => {
      for (const table of ["runs", "run_attempts", "run_ledger", "waitpoints", "batches", "sessions", "session_runs"]) await pool.query(`VACUUM ANALYZE ${table}`);
    });
    return { loadedAt, total: (main * 6) / 5, loadMs, steps, envId: stack.project.environments.dev.id };
  } finally {
    await stack.close();
  }
}

/**
 * `BENCH=history`: svc's hot paths and reads on an empty database and on one holding `runs`
 * finished runs (30 days of history), in the same run, on a Postgres of its own with autovacuum on.
 */
export async function historyScenario(o: HistoryOptions): Promise<string[]> {
  const server = await startOwnPostgres("history");
  const empty = await benchDatabaseOn(server.url, "history_empty");
  const full = await benchDatabaseOn(server.url, "history_full");
  try {
    const settings = Object.entries(server.settings).map(([k, v]) => `${k}=${v}`).join(", ");
    const out = [`## History (issue 19): ${o.runs.toLocaleString("en-US")} finished runs against an empty database, same run, own Postgres (${settings})`];
    const emptyRounds: Figures[] = [];
    const fullRounds: Figures[] = [];
    await settle(server.url);
    if (!o.retentionOnly) emptyRounds.push(await measure(empty.url, o, server.postmaster, { loadedAt: new Date(), preloaded: 0 }));
    const loaded = await preload(full.url, o.runs);
    out.push(`preload: ${loaded.total.toLocaleString("en-US")} runs (INSERT … SELECT) in ${(loaded.loadMs / 1000).toFixed(0)} s: ${loaded.steps.join(", ")}`);
    await settle(server.url);
    const sizeClient = createPool(full.url, { max: 1, applicationName: "svc-bench-sizes", onError: (error) => console.error("bench sizes pool:", error.message) });
    out.push("", ...bytesReport(await tableBytes(sizeClient)));
    if (!o.retentionOnly) {
      for (let r = 0; r < o.repeat; r++) {
        await settle(server.url);
        fullRounds.push(await measure(full.url, o, server.postmaster, { loadedAt: loaded.loadedAt, preloaded: loaded.total }));
        await settle(server.url);
        emptyRounds.push(await measure(empty.url, o, server.postmaster, { loadedAt: new Date(), preloaded: 0 }));
      }
      out.push("", ...compare(emptyRounds, fullRounds, o));
      out.push("", "EXPLAIN (ANALYZE, BUFFERS) of the slowest reads, loaded:", ...(await explainSlowReads(sizeClient, loaded.envId, loaded.loadedAt)));
    }
    for (const [i, pace] of o.retentionPaces.entries()) {
      await settle(server.url);
      console.error(`history ${new Date().toISOString()}: retention under load, ${pace.batchSize} per statement, rest ${pace.restRatio}×`);
      const lines = await retentionUnderLoad(full.url, { days: o.retentionDays - i, seconds: o.loadSeconds, sweepSeconds: o.sweepSeconds, ...pace });
      console.error(lines.join("\n"));
      out.push("", ...lines);
    }
    await sizeClient.query("ANALYZE");
    out.push("", "after the scenario (ANALYZE again):", ...bytesReport(await tableBytes(sizeClient)));
    await sizeClient.end();
    return out;
  } finally {
    await empty.close();
    await full.close();
    await server.stop();
  }
}

function compare(empty: Figures[], full: Figures[], o: HistoryOptions): string[] {
  const rateOf = (t: Timing, n: number) => (n / t.total) * 1000;
  const each = (xs: number[]) => xs.map((x) => x.toFixed(x < 10 ? 2 : 0)).join(", ");
  const within = (e: number, f: number, higherIsBetter: boolean) => {
    const ratio = f / e;
    const ok = higherIsBetter ? ratio >= 0.9 : ratio <= 1.1;
    return `${ratio.toFixed(2)} ${ok ? "met" : "not met"}`;
  };
  const hot = (label: string, get: (f: Figures) => number, higherIsBetter: boolean) => {
    const e = empty.map(get);
    const f = full.map(get);
    return `| ${label} | ${each(e)} | ${each(f)} | ${within(median(e), median(f), higherIsBetter)} |`;
  };
  const pooled = (rounds: Figures[], get: (f: Figures) => number[]) => percentiles(rounds.flatMap(get));
  const roundLine = (label: string, f: Figures) =>
    `- ${label}: ${rateOf(f.batched, o.batched).toFixed(0)} runs/s, Postgres ${(((f.batched.cpu?.postgres ?? NaN) / o.batched) * 1000).toFixed(0)} ms; ${f.background}; full-page images, batched: ${f.fullPages.batched}; resumes: ${f.fullPages.resumes}`;
  // A round's p99 rests on its slowest few samples; pooled, the rounds' samples give one steadier p99 a side.
  const pooledP99 = (label: string, get: (f: Figures) => number[]) => {
    const e = pooled(empty, get);
    const f = pooled(full, get);
    return `| ${label} | ${fmt(e.p99)} (n=${e.n}) | ${fmt(f.p99)} (n=${f.n}) | ${within(e.p99, f.p99, false)} |`;
  };
  const lines = [
    `### Hot paths: empty (before the preload, then after each loaded round) against ${o.runs.toLocaleString("en-US")} runs; goal within 10 %`,
    `| | empty, each round | loaded, each round | loaded ÷ empty (medians) |`,
    `|---|---|---|---|`,
    hot(`batched trigger (500 per call) → done, runs/s (${o.batched})`, (f) => rateOf(f.batched, o.batched), true),
    hot(`one by one, 16 in flight → done, runs/s (${o.oneByOne})`, (f) => rateOf(f.oneByOne, o.oneByOne), true),
    hot(`resume HTTP → code p50, ms (${o.waits} one at a time)`, (f) => percentiles(f.resume).p50, false),
    hot(`resume HTTP → code p99, ms`, (f) => percentiles(f.resume).p99, false),
    hot(`timeout lateness p50, ms (${o.timeouts} over 5 s)`, (f) => percentiles(f.timeouts).p50, false),
    hot(`timeout lateness p99, ms`, (f) => percentiles(f.timeouts).p99, false),
    pooledP99(`resume HTTP → code p99, every round's samples pooled, ms`, (f) => f.resume),
    pooledP99(`timeout lateness p99, every round's samples pooled, ms`, (f) => f.timeouts),
    `| WAL per run in the batched round, bytes (full-page images) | ${empty.map((f) => `${f.wal.bytes.toFixed(0)} (${f.wal.fpi.toFixed(2)})`).join(", ")} | ${full.map((f) => `${f.wal.bytes.toFixed(0)} (${f.wal.fpi.toFixed(2)})`).join(", ")} | |`,
    "",
    "The server during each batched round, and each round's Postgres CPU per 1,000 runs:",
    ...empty.map((f, i) => roundLine(`empty ${i + 1}`, f)),
    ...full.map((f, i) => roundLine(`loaded ${i + 1}`, f)),
    "",
    `### CPU per 1,000 runs end to end (process CPU: the benchmark process = worker + HTTP client, the API process, every Postgres process), median round`,
    `| | batched, empty | batched, loaded | one by one, empty | one by one, loaded |`,
    `|---|---|---|---|---|`,
    ...(["bench", "api", "postgres"] as const).map(
      (k) => `| ${k} | ${[cpu(empty, "batched", k, o.batched), cpu(full, "batched", k, o.batched), cpu(empty, "oneByOne", k, o.oneByOne), cpu(full, "oneByOne", k, o.oneByOne)].join(" | ")} |`,
    ),
    "",
    `### Reads, one request at a time, client round trip (${o.samples} per case and round, pooled over the rounds); goal p99 ≤ ${GOAL_READ_MS} ms loaded`,
    `| case | empty p50 / p99 | loaded p50 / p99 | goal |`,
    `|---|---|---|---|`,
  ];
  for (const label of full[0]!.reads.keys()) {
    const e = pooled(empty, (f) => f.reads.get(label) ?? []);
    const f = pooled(full, (x) => x.reads.get(label) ?? []);
    lines.push(`| ${label} | ${e.n ? `${fmt(e.p50)} / ${fmt(e.p99)}` : "—"} | ${fmt(f.p50)} / ${fmt(f.p99)} | ${f.p99 <= GOAL_READ_MS ? "met" : "not met"} |`);
  }
  return lines;
}

interface ServerStats {
  bytes: number;
  fpi: number;
  checkpoints: number;
  /** Autovacuum and autoanalyze runs finished so far, by table ("vacuum runs", "analyze runs"). */
  autovacuums: Map<string, number>;
  /** What autovacuum workers are doing now. */
  autovacuumNow: string[];
}

/** The server's WAL counters (pg_stat_wal: the whole server, autovacuum included), checkpoints and autovacuum runs. */
async function serverStats(url: string): Promise<ServerStats> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // Postgres 17 moved the checkpoint counters to pg_stat_checkpointer.
    const { rows: views } = await client.query<{ checkpointer: boolean }>(`SELECT to_regclass('pg_catalog.pg_stat_checkpointer') IS NOT NULL AS checkpointer`);
    const checkpoints = views[0]!.checkpointer ? "(SELECT num_timed + num_requested FROM pg_stat_checkpointer)" : "(SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter)";
    const { rows } = await client.query<{ bytes: string; fpi: string; checkpoints: string }>(
      `SELECT wal_bytes AS bytes, wal_fpi AS fpi, ${checkpoints} AS checkpoints FROM pg_stat_wal`,
    );
    const { rows: tables } = await client.query<{ name: string; vacuums: string; analyzes: string }>(
      `SELECT schemaname || '.' || relname AS name, autovacuum_count AS vacuums, autoanalyze_count AS analyzes FROM pg_stat_all_tables WHERE autovacuum_count + autoanalyze_count > 0`,
    );
    const { rows: workers } = await client.query<{ query: string }>(`SELECT query FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`);
    const autovacuums = new Map<string, number>();
    for (const t of tables) {
      autovacuums.set(`vacuum ${t.name}`, Number(t.vacuums));
      autovacuums.set(`analyze ${t.name}`, Number(t.analyzes));
    }
    return { bytes: Number(rows[0]!.bytes), fpi: Number(rows[0]!.fpi), checkpoints: Number(rows[0]!.checkpoints), autovacuums, autovacuumNow: workers.map((w) => w.query) };
  } finally {
    await client.end();
  }
}

/** Checkpoints and autovacuum runs between two readings, and autovacuum workers busy at either. */
function describeBackground(before: ServerStats, after: ServerStats): string {
  const ran = [...after.autovacuums].filter(([k, n]) => n > (before.autovacuums.get(k) ?? 0)).map(([k]) => k);
  const busy = [...new Set([...before.autovacuumNow, ...after.autovacuumNow])];
  return `checkpoints ${after.checkpoints - before.checkpoints}; autovacuum finished: ${ran.join(", ") || "none"}; busy at start or end: ${busy.join(", ") || "none"}`;
}

/** CPU ms per 1,000 runs of one process group, the median over the rounds. */
function cpu(rounds: Figures[], which: "batched" | "oneByOne", key: keyof CpuTimes, n: number): string {
  const xs = rounds.map((r) => ((r[which].cpu?.[key] ?? NaN) / n) * 1000).sort((a, b) => a - b);
  return `${xs[Math.floor(xs.length / 2)]!.toFixed(0)} ms`;
}
