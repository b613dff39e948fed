import pg from "pg";
import { postJson } from "./http-client.ts";
import { PgBoss } from "pg-boss";
import { task } from "../packages/runtime/src/sdk/index.ts";
import { cpuSpent, cpuTimes, type CpuTimes } from "./process-cpu.ts";
import { benchDatabase, benchStack, type BenchDatabase } from "./setup.ts";
import { settle } from "./settle.ts";
import { now, rate } from "./stats.ts";

const noop = task({ id: "noop", run: async () => 1 });

async function finishedCount(stack: Awaited<ReturnType<typeof benchStack>>, target: number): Promise<void> {
  if (target <= 0) return; // nothing to wait for (BENCH_HISTORY_BATCHED=0, say): no event would end the wait
  let done = 0;
  await new Promise<void>((resolve) => {
    const off = stack.worker!.events.on("runFinished", () => {
      if (++done >= target) {
        off();
        resolve();
      }
    });
  });
}

/**
 * svc's HTTP batch trigger + worker, to COMPLETED: `warmup` runs, then `n` timed. With the
 * postmaster's pid (a Postgres on this machine), also the CPU the timed runs took.
 */
export async function svcBatched(db: { url: string }, n: number, batch: number, warmup: number, postmaster?: number): Promise<Timing> {
  const stack = await benchStack(db.url, { tasks: [noop], api: true, concurrency: Number(process.env.BENCH_CONCURRENCY ?? 200) });
  const key = stack.project.environments.dev.secretKey;
  const round = async (count: number) => {
    const all = finishedCount(stack, count);
    const t0 = now();
    for (let i = 0; i < count; i += batch) {
      const items = Array.from({ length: Math.min(batch, count - i) }, (_, j) => ({ task: "noop", payload: { i: i + j } }));
      const res = await postJson(`${stack.apiUrl}/api/v2/tasks/batch`, JSON.stringify({ items }), { authorization: `Bearer ${key}` });
      if (res.status !== 202) throw new Error(`batch trigger failed: ${res.status} ${res.text}`);
    }
    const triggered = now() - t0;
    await all;
    return { triggered, total: now() - t0 };
  };
  if (warmup > 0) await round(warmup);
  const result = await measured(stack.apiPid, postmaster, () => round(n));
  await stack.close();
  return { ...result, runsUpdates: await runsUpdates(db.url) };
}

/** svc's HTTP trigger one by one, `inFlight` at a time, + worker, to COMPLETED (as svcBatched). */
export async function svcOneByOne(db: { url: string }, n: number, inFlight: number, warmup: number, postmaster?: number): Promise<Timing> {
  const stack = await benchStack(db.url, { tasks: [noop], api: true, concurrency: Number(process.env.BENCH_CONCURRENCY ?? 200) });
  const key = stack.project.environments.dev.secretKey;
  const round = async (count: number) => {
    const all = finishedCount(stack, count);
    const t0 = now();
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < count) {
          next++;
          const res = await postJson(`${stack.apiUrl}/api/v1/tasks/noop/trigger`, '{"payload":{}}', { authorization: `Bearer ${key}` });
          if (res.status !== 200) throw new Error(`trigger failed: ${res.status} ${res.text}`);
        }
      }),
    );
    const triggered = now() - t0;
    await all;
    return { triggered, total: now() - t0 };
  };
  if (warmup > 0) await round(warmup);
  const result = await measured(stack.apiPid, postmaster, () => round(n));
  await stack.close();
  return { ...result, runsUpdates: await runsUpdates(db.url) };
}

async function measured(api: number | undefined, postmaster: number | undefined, round: () => Promise<Timing>): Promise<Timing> {
  if (!postmaster) return round();
  const before = cpuTimes({ api, postmaster });
  const result = await round();
  return { ...result, cpu: cpuSpent(before, cpuTimes({ api, postmaster })) };
}

/** Raw pg-boss: insert (batched) or send (16 in flight) N no-op jobs, one worker with comparable batching. */
async function rawPgBoss(db: BenchDatabase, n: number, mode: { batch: number } | { inFlight: number }, warmup: number) {
  const boss = new PgBoss({ connectionString: db.url, schema: "pgboss", max: 30, useListenNotify: true, superviseIntervalSeconds: 2 } as ConstructorParameters<typeof PgBoss>[0]);
  boss.on("error", () => {});
  await boss.start();
  await boss.createQueue("raw", { notify: true });
  let done = 0;
  let target = 0;
  let resolveAll: () => void = () => {};
  await boss.work("raw", { batchSize: 200, localConcurrency: 1, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }, async (jobs: unknown[]) => {
    done += jobs.length;
    if (done >= target) resolveAll();
  });
  const round = async (count: number) => {
    done = 0;
    target = count;
    const all = new Promise<void>((r) => (resolveAll = r));
    const t0 = now();
    if ("batch" in mode) {
      for (let i = 0; i < count; i += mode.batch) {
        await boss.insert("raw", Array.from({ length: Math.min(mode.batch, count - i) }, (_, j) => ({ data: { i: i + j } })));
      }
    } else {
      let next = 0;
      await Promise.all(Array.from({ length: mode.inFlight }, async () => { while (next < count) { next++; await boss.send("raw", { i: next }); } }));
    }
    const triggered = now() - t0;
    await all;
    return { triggered, total: now() - t0 };
  };
  if (warmup > 0) await round(warmup);
  const result = await round(n);
  await boss.stop({ graceful: false, close: true });
  return result;
}

export type Timing = { triggered: number; total: number; cpu?: CpuTimes; runsUpdates?: RunsUpdates };

/** Updates of `runs` over a side's life (warm-up included), and the share of them that was HOT. */
export interface RunsUpdates {
  perRun: number;
  hotShare: number;
}

/**
 * Read once the side's backends have exited (a backend reports its last counts as it exits, and
 * they exit a moment after their clients close), so that every backend's counts are in. Read
 * right after the close, the ratio varied from 2.0 to 3.7 between rounds of the same code.
 */
async function runsUpdates(url: string): Promise<RunsUpdates> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let i = 0; i < 200; i++) {
      const { rows: others } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
      if (Number(others[0]!.n) === 0) break;
      await new Promise((r) => setTimeout(r, 25)); // backends exiting: no event to await from here
    }
    await client.query(`SELECT pg_stat_clear_snapshot()`);
    const { rows } = await client.query<{ ins: string; upd: string; hot: string }>(
      `SELECT n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'runs'`,
    );
    const { ins, upd, hot } = rows[0]!;
    return { perRun: Number(upd) / Math.max(1, Number(ins)), hotShare: Number(hot) / Math.max(1, Number(upd)) };
  } finally {
    await client.end();
  }
}

/** ", runs updated 2.0× per run, 72 % HOT" */
export function updatesText(u: RunsUpdates | undefined): string {
  return u ? `; runs updated ${u.perRun.toFixed(1)}× per run, ${(u.hotShare * 100).toFixed(0)} % HOT` : "";
}

/** Runs raw and svc alternately `repeat` times (this machine drifts by ±30 %); the pair with the median ratio is reported. */
async function pairs(repeat: number, raw: () => Promise<Timing>, svc: () => Promise<Timing>) {
  const runs: { raw: Timing; svc: Timing; ratio: number }[] = [];
  for (let i = 0; i < repeat; i++) {
    const r = await raw();
    const v = await svc();
    runs.push({ raw: r, svc: v, ratio: r.total / v.total });
  }
  const sorted = [...runs].sort((a, b) => a.ratio - b.ratio);
  return { median: sorted[Math.floor(sorted.length / 2)]!, ratios: runs.map((x) => x.ratio.toFixed(2)).join(", ") };
}

async function inDatabase<T>(name: string, embedded: { url: string } | undefined, fn: (db: BenchDatabase) => Promise<T>): Promise<T> {
  const db = await benchDatabase(name, embedded);
  try {
    // Each side starts on a settled server, not while the other side's pages are being written out.
    await settle(db.adminUrl);
    return await fn(db);
  } finally {
    await db.close();
  }
}

/**
 * Steady-state rates: each side first processes `warmup` runs in its fresh database and process
 * (JIT, connection pools, prepared statements, the first pages of each table), then `n` are timed.
 */
export async function throughputScenario(embedded: { url: string } | undefined, n: number, repeat: number, warmup: number) {
  const out: string[] = [
    `## Throughput (issue #2): ${n.toLocaleString("en-US")} trivial runs after ${warmup.toLocaleString("en-US")} warm-up runs, one worker, one database (raw and svc alternated ${repeat}×, median pair shown)`,
  ];
  const batched = await pairs(
    repeat,
    () => inDatabase("tp_raw_batch", embedded, (db) => rawPgBoss(db, n, { batch: 500 }, warmup)),
    () => inDatabase("tp_svc_batch", embedded, (db) => svcBatched(db, n, 500, warmup)),
  );
  const m = Math.min(n, 3000);
  const single = await pairs(
    repeat,
    () => inDatabase("tp_raw_single", embedded, (db) => rawPgBoss(db, m, { inFlight: 16 }, Math.min(warmup, 500))),
    () => inDatabase("tp_svc_single", embedded, (db) => svcOneByOne(db, m, 16, Math.min(warmup, 500))),
  );
  const { raw: rawBatch, svc: svcBatch } = batched.median;
  const { raw: rawSingle, svc: svcSingle } = single.median;
  out.push(
    `batched (500 per call)   raw pg-boss insert+work: enqueue ${rate(n, rawBatch.triggered)}, end-to-end ${rate(n, rawBatch.total)}`,
    `                         svc HTTP batch + worker: enqueue ${rate(n, svcBatch.triggered)}, end-to-end ${rate(n, svcBatch.total)}  → ratio ${batched.median.ratio.toFixed(2)} (all: ${batched.ratios})${updatesText(svcBatch.runsUpdates)}`,
    `one by one, 16 in flight raw pg-boss send+work:   enqueue ${rate(m, rawSingle.triggered)}, end-to-end ${rate(m, rawSingle.total)}`,
    `                         svc HTTP trigger+worker: enqueue ${rate(m, svcSingle.triggered)}, end-to-end ${rate(m, svcSingle.total)}  → ratio ${single.median.ratio.toFixed(2)} (all: ${single.ratios})${updatesText(svcSingle.runsUpdates)}`,
  );
  return out;
}
