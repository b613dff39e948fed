import { createPool, migrate } from "../packages/runtime/src/db/index.ts";
import { createToken } from "../packages/runtime/src/engine/index.ts";
import { connectTestEngine } from "../packages/runtime/src/testing/connect-engine.ts";
import { databaseCpu } from "./process-cpu.ts";
import { Cluster, tallyDelta } from "./scaleout-cluster.ts";
import { benchDatabase } from "./setup.ts";
import { fmt, line, percentiles } from "./stats.ts";

export interface ScaleoutOptions {
  /** Worker process counts to measure, e.g. [1, 2, 4]. */
  workerCounts: number[];
  /** API processes (2). */
  apis: number;
  /** Slots of each worker process in the throughput and resume parts. */
  concurrency: number;
  /** Runs triggered → COMPLETED per worker count, after `warmup`. */
  runs: number;
  warmup: number;
  /** HTTP triggers in flight. */
  inFlight: number;
  /** One-at-a-time resumes per worker count (after a fifth as many warm-up ones). */
  waits: number;
  giveBacks: GiveBackOptions;
}

export interface GiveBackOptions {
  workers: number;
  slots: number;
  /** Runs in circulation as a share of all slots (0.8). */
  load: number;
  /** How long the code after the wait holds its slot. */
  holdMs: number;
  resumes: number;
  warmup: number;
  /** Measure the offers as main chooses them (at random) besides the slot-aware choice. */
  sides: ("random" | "slot-aware")[];
}

/** The part of the scenario given to one worker count, on a fresh database. */
async function measureWorkers(workers: number, options: ScaleoutOptions): Promise<{ lines: string[]; runsPerSecond: number; resumeP50: number }> {
  const db = await benchDatabase(`scaleout${workers}`);
  const { engine, env, project, close, pool } = await stackDatabase(db.url);
  const cluster = await Cluster.start({ url: db.url, apis: options.apis, workers, concurrency: options.concurrency, holdMs: 0, secretKey: project.environments.dev.secretKey });
  try {
    // What the processes cost doing nothing (polls, heartbeats, lease renewals, timer loops): a
    // worker count's fixed price, apart from what each run costs.
    const idleMs = 5_000;
    const idleSpan = await cpuSpan(cluster, pool, db.url);
    await new Promise((resolve) => setTimeout(resolve, idleMs));
    const idleCpu = idleSpan.stop();
    const perSecond = (ms: number) => `${((ms / idleMs) * 1000).toFixed(1)} ms/s`;
    const idle = `idle, CPU per second: workers ${perSecond(idleCpu.workers)}, APIs ${perSecond(idleCpu.apis)}, Postgres backends ${perSecond(idleCpu.postgres)}`;
    // Trigger → COMPLETED: `inFlight` HTTP triggers at a time over the APIs, every run counted
    // once a worker reported it finished.
    const triggerAll = async (n: number) => {
      let issued = 0;
      await Promise.all(Array.from({ length: options.inFlight }, async () => { while (issued++ < n) await cluster.trigger("scaleout-noop", {}); }));
    };
    await triggerAll(options.warmup);
    await cluster.finishedAtLeast(options.warmup);
    const before = cluster.tally();
    const kindsBefore = await cluster.statementKinds();
    // CPU by process kind over the measured runs: where an added process costs.
    const span = await cpuSpan(cluster, pool, db.url);
    const t0 = performance.now();
    await triggerAll(options.runs);
    await cluster.finishedAtLeast(options.warmup + options.runs);
    const elapsed = performance.now() - t0;
    const spent = span.stop();
    const perThousand = (ms: number) => `${Math.round((ms / options.runs) * 1000)} ms`;
    const cpu = `CPU per 1,000 runs: workers ${perThousand(spent.workers)}, APIs ${perThousand(spent.apis)}, Postgres backends ${perThousand(spent.postgres)}, load driver ${perThousand(spent.driver)}`;
    const measured = tallyDelta(before, cluster.tally());
    const kinds = Object.entries(await cluster.statementKinds())
      .map(([kind, n]) => [kind, (n - (kindsBefore[kind] ?? 0)) / options.runs] as const)
      .filter(([, perRun]) => perRun >= 0.005)
      .sort((a, b) => b[1] - a[1]);
    const perWorker = measured.finished;
    const { rows: statuses } = await pool.query<{ status: string; n: string }>(`SELECT status, count(*) AS n FROM runs WHERE task_identifier = 'scaleout-noop' GROUP BY status ORDER BY status`);
    const runsPerSecond = (options.runs / elapsed) * 1000;

    // One resume at a time: HTTP /complete (the APIs in turn) → the code after the wait, on
    // whichever worker suspended the run.
    const waitingRuns = async (n: number) => {
      const tokens: { tokenId: string; runId: string }[] = [];
      for (let i = 0; i < n; i++) {
        const tokenId = (await createToken(engine, env.id, { timeout: "1h" })).waitpoint.id;
        tokens.push({ tokenId, runId: await cluster.trigger("scaleout-wait", { tokenId }) });
      }
      for (const t of tokens) await cluster.until("suspended", t.runId);
      return tokens;
    };
    const resumeOne = async ({ tokenId, runId }: { tokenId: string; runId: string }) => {
      const resumed = cluster.resumed(tokenId);
      const finished = cluster.until("finished", runId);
      const t0 = process.hrtime.bigint();
      await cluster.complete(tokenId);
      const ms = Number((await resumed) - t0) / 1e6;
      await finished;
      await new Promise((r) => setTimeout(r, Math.random() * 3));
      return ms;
    };
    for (const t of await waitingRuns(Math.ceil(options.waits / 5))) await resumeOne(t);
    const latencies: number[] = [];
    const beforeWaits = cluster.tally();
    for (const t of await waitingRuns(options.waits)) latencies.push(await resumeOne(t));
    // Each wait: a token created with a timeout (its NOTIFY heard by every worker's timer loop), a
    // run triggered that waits on it, the completion, the resume.
    const waitStatements = tallyDelta(beforeWaits, cluster.tally()).statements / options.waits;
    const resume = percentiles(latencies);
    const share = perWorker.map((n) => `${Math.round((n / options.runs) * 100)} %`).join(" / ");
    return {
      runsPerSecond,
      resumeP50: resume.p50,
      lines: [
        `${workers} worker process${workers > 1 ? "es" : ""} × ${options.concurrency} slots, ${options.apis} API processes: trigger → COMPLETED ${Math.round(runsPerSecond).toLocaleString("en-US")} runs/s (${options.runs} runs, ${options.inFlight} triggers in flight); runs per worker ${perWorker.join(" / ")} (${share}); statements from the workers ${fmt(measured.statements / options.runs)} per run; claims from runs ${fmt(measured.claims / options.runs)} per run (${Math.round((measured.emptyClaims / Math.max(1, measured.claims)) * 100)} % empty); full-flag writes ${measured.flagWrites}; runs by status: ${statuses.map((r) => `${r.status} ${r.n}`).join(", ")}`,
        `  ${cpu}`,
        `  the workers' statements per run by kind (≥ 0.005): ${kinds.map(([kind, perRun]) => `${perRun.toFixed(3)} ${kind}`).join("; ")}`,
        `  ${idle}`,
        line(`  one at a time, HTTP /complete → code`, resume),
        `  statements from the workers per wait (token with a timeout, run, wait, completion, resume): ${fmt(waitStatements)}`,
      ],
    };
  } finally {
    await cluster.stop();
    await close();
    await db.close();
  }
}

/** Give-backs per 1,000 resumes: `workers` processes at `load` of their slots, the offers chosen as main does or slot-aware. */
async function measureGiveBacks(side: "random" | "slot-aware", o: GiveBackOptions): Promise<string[]> {
  const db = await benchDatabase(`giveback_${side.replace("-", "_")}`);
  const { engine, env, project, close, pool } = await stackDatabase(db.url);
  if (side === "random") {
    // main's choice, in this database only: every worker looks free to completions, so an offer
    // goes to the worker that suspended the run if it is live, else to one at random.
    await pool.query(`CREATE FUNCTION bench_never_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.full_since := NULL; RETURN NEW; END $$`);
    await pool.query(`CREATE TRIGGER bench_never_full BEFORE INSERT OR UPDATE ON workers FOR EACH ROW EXECUTE FUNCTION bench_never_full()`);
  }
  const cluster = await Cluster.start({ url: db.url, apis: 2, workers: o.workers, concurrency: o.slots, holdMs: o.holdMs, secretKey: project.environments.dev.secretKey });
  try {
    const lanes = Math.round(o.load * o.workers * o.slots);
    // Each lane keeps one run holding a slot: its run is resumed, holds its slot for holdMs and
    // ends; meanwhile the lane's next run starts and waits on a fresh token, and is resumed as soon
    // as the one before has ended. (Starting and suspending take a slot too, for a few ms.)
    const waitingRun = async () => {
      const tokenId = (await createToken(engine, env.id, { timeout: "1h" })).waitpoint.id;
      const runId = await cluster.trigger("scaleout-wait", { tokenId });
      await cluster.until("suspended", runId);
      return { tokenId, runId };
    };
    let done = 0;
    let marked = false;
    let before = cluster.tally();
    let t0 = 0;
    const latencies: number[] = [];
    const target = o.warmup + o.resumes;
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        let next = waitingRun();
        while (done < target) {
          const { tokenId, runId } = await next;
          const resumed = cluster.resumed(tokenId);
          const finished = cluster.until("finished", runId);
          const sent = process.hrtime.bigint();
          await cluster.complete(tokenId);
          const ms = Number((await resumed) - sent) / 1e6;
          next = waitingRun();
          await finished;
          if (marked) latencies.push(ms);
          if (++done === o.warmup) {
            marked = true;
            before = cluster.tally();
            cluster.sampleSlots(20);
            t0 = performance.now();
          }
        }
        await next;
      }),
    );
    const elapsed = performance.now() - t0;
    cluster.sampleSlots(0);
    const delta = tallyDelta(before, cluster.tally());
    const resumes = Object.values(delta.resumedVia).reduce((a, b) => a + b, 0);
    const occupancy = cluster.meanSlotsInUse() / (o.workers * o.slots);
    const via = Object.entries(delta.resumedVia).map(([k, n]) => `${k} ${n}`).join(", ");
    return [
      `${side.padEnd(10)} ${fmt((delta.givenBack / resumes) * 1000)} give-backs per 1,000 resumes (${delta.givenBack} of ${resumes}; resumed via ${via}); ${Math.round((resumes / elapsed) * 1000)} resumes/s; slots in use ${Math.round(occupancy * 100)} % on average; runs per worker ${delta.finished.join(" / ")}; full-flag writes ${delta.flagWrites} (${fmt((delta.flagWrites / resumes) * 1000)} per 1,000 resumes)`,
      line(`  HTTP /complete → code, under this load`, percentiles(latencies)),
    ];
  } finally {
    await cluster.stop();
    await close();
    await db.close();
  }
}

/** The database of one part: migrated, the default project, engine deps for tokens (no queue). */
/** CPU (ms) from now to stop(), by process kind: the workers, the APIs, the database's Postgres backends, this process (the load driver). */
async function cpuSpan(cluster: Cluster, pool: Parameters<typeof databaseCpu>[0], url: string) {
  const postgres = await databaseCpu(pool, new URL(url).pathname.slice(1));
  const before = cluster.cpu();
  const own = process.cpuUsage();
  return {
    stop() {
      const after = cluster.cpu();
      const mine = process.cpuUsage(own);
      return { workers: after.workers - before.workers, apis: after.apis - before.apis, postgres: postgres.stop(), driver: (mine.user + mine.system) / 1000 };
    },
  };
}

async function stackDatabase(url: string) {
  const pool = createPool(url, { max: 4, applicationName: "svc-bench", onError: (error) => console.error("bench pool:", error.message) });
  await migrate(pool);
  const connected = await connectTestEngine({ url, pool });
  return { ...connected, pool, close: async () => { await connected.close(); await pool.end(); } };
}

/**
 * `BENCH=scaleout`: 1, 2 and 4 worker processes and 2 API processes against one Postgres (each
 * count on a fresh database and fresh processes): trigger → COMPLETED runs/s, one-at-a-time resume
 * latency and how the runs spread over the workers; then give-backs per 1,000 resumes with 4
 * workers at 80 % load, offers chosen as main does (at random) and slot-aware.
 */
export async function scaleoutScenario(embedded: { url: string } | undefined, options: ScaleoutOptions): Promise<string[]> {
  if (embedded) throw new Error("BENCH=scaleout needs DATABASE_URL: its worker processes connect to the server themselves");
  const out = [`## Scale-out on one Postgres (issue #19): ${options.workerCounts.join(", ")} worker processes, ${options.apis} API processes`];
  const results: { workers: number; runsPerSecond: number; resumeP50: number }[] = [];
  for (const workers of options.workerCounts) {
    const r = await measureWorkers(workers, options);
    results.push({ workers, ...r });
    out.push(...r.lines);
  }
  const one = results.find((r) => r.workers === 1);
  if (one) {
    for (const r of results.filter((r) => r.workers !== 1)) {
      out.push(`  ${r.workers} workers ÷ 1: runs/s ${(r.runsPerSecond / one.runsPerSecond).toFixed(2)} (goal ≥ 0.9), resume p50 ${(r.resumeP50 / one.resumeP50).toFixed(2)}`);
    }
  }
  const g = options.giveBacks;
  if (g.sides.length === 0) return out;
  out.push(`Give-backs: ${g.workers} worker processes × ${g.slots} slots, ${Math.round(g.load * g.workers * g.slots)} lanes (${Math.round(g.load * 100)} % of the slots), each keeping one resumed run holding its slot ${g.holdMs} ms and the next one waiting; ${g.resumes} resumes after ${g.warmup}`);
  for (const side of g.sides) out.push(...(await measureGiveBacks(side, g)));
  return out;
}
