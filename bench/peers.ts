import { readFileSync } from "node:fs";
import type { PeerSide } from "./peer-side.ts";
import { pause } from "./peer-svc.ts";
import { writeSnapshot, writesPerUnit } from "./peer-writes.ts";
import { benchDatabase } from "./setup.ts";
import { settle } from "./settle.ts";
import { fmt, line, median, now, percentiles } from "./stats.ts";

export interface PeerSizes {
  /** Units triggered one at a time, and each then waited for (per side and repeat). */
  runs: number;
  /** Units through 16 lanes. */
  inFlight: number;
  /** Waits resumed one at a time. */
  waits: number;
  /** Warm-up units (16 lanes) and resumes before anything is timed, in each fresh process state. */
  warmup: number;
  repeat: number;
  /** Count what each side persists per unit (first repeat only; 44 s per side of idle waits). */
  writes: boolean;
}

const LANES = 16;
/** Waits are set up this many at a time, then resumed one by one (a DBOS wait polls every 10 s). */
const ROUND = 100;
const WRITES_RUNS = 1000;
const WRITES_WAITS = 200;

/** The sides, loaded only when this scenario runs (DBOS registers its workflows on import). */
const SIDES: { name: string; start: (url: string) => Promise<PeerSide> }[] = [
  { name: "svc", start: async (url) => (await import("./peer-svc.ts")).svcSide(url) as Promise<PeerSide> },
  { name: "graphile-worker", start: async (url) => (await import("./peer-graphile-worker.ts")).graphileWorkerSide(url) as Promise<PeerSide> },
  { name: "DBOS", start: async (url) => (await import("./peer-dbos.ts")).dbosSide(url) as Promise<PeerSide> },
];

interface Figures {
  single: number[];
  flight: number[];
  flightRate: number;
  resume: number[];
  extra: { label: string; samples: number[] }[];
  writes?: { run: ReturnType<typeof writesPerUnit>; resume: ReturnType<typeof writesPerUnit> };
}

async function lanes(count: number, width: number, fn: () => Promise<void>) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => { while (next < count) { next++; await fn(); } }));
}

async function resumeEach(side: PeerSide, waits: unknown[], samples?: number[]) {
  for (const w of waits) {
    const t0 = now();
    const { resumed, finished } = await side.resume(w);
    samples?.push((await resumed) - t0);
    await finished;
    await pause();
  }
}

/** One side in a fresh database of its own: warm-up, then each measurement in turn. */
async function measure(start: (url: string) => Promise<PeerSide>, dbName: string, embedded: { url: string } | undefined, sizes: PeerSizes, countWrites: boolean): Promise<Figures> {
  const db = await benchDatabase(dbName, embedded);
  try {
    await settle(db.adminUrl);
    const side = await start(db.url);
    try {
      await lanes(sizes.warmup, LANES, () => side.runOne());
      await resumeEach(side, await side.waiting(Math.min(sizes.warmup, 3 * ROUND)));

      const single: number[] = [];
      for (let i = 0; i < sizes.runs; i++) {
        const t0 = now();
        await side.runOne();
        single.push(now() - t0);
        await pause();
      }

      const flight: number[] = [];
      const t16 = now();
      await lanes(sizes.inFlight, LANES, async () => {
        const t0 = now();
        await side.runOne();
        flight.push(now() - t0);
      });
      const flightRate = (sizes.inFlight / (now() - t16)) * 1000;

      const resume: number[] = [];
      for (let done = 0; done < sizes.waits; done += ROUND) await resumeEach(side, await side.waiting(Math.min(ROUND, sizes.waits - done)), resume);

      const extra = (await side.extra?.(Math.min(sizes.waits, 500))) ?? [];

      let writes: Figures["writes"];
      if (countWrites) {
        const s0 = await writeSnapshot(db.url);
        await lanes(WRITES_RUNS, LANES, () => side.runOne());
        const s1 = await writeSnapshot(db.url);
        const waits = await side.waiting(WRITES_WAITS);
        const s2 = await writeSnapshot(db.url);
        await resumeEach(side, waits);
        const s3 = await writeSnapshot(db.url);
        writes = { run: writesPerUnit(s0, s1, WRITES_RUNS), resume: writesPerUnit(s2, s3, WRITES_WAITS) };
      }
      return { single, flight, flightRate, resume, extra, writes };
    } finally {
      await side.close();
    }
  } finally {
    await db.close();
  }
}

function version(pkg: string): string {
  return (JSON.parse(readFileSync(new URL(`../node_modules/${pkg}/package.json`, import.meta.url), "utf8")) as { version: string }).version;
}

const p50 = (xs: number[]) => percentiles(xs).p50;

/**
 * svc next to graphile-worker and DBOS Transact on the same Postgres, in the same run (issue 19
 * §4): trigger → done one at a time, 16 in flight, and wait → resume. The sides take turns in a
 * rotating order, `repeat` times, each time in a fresh database and with its own warm-up; ratios
 * are svc ÷ peer within one repeat (the machine drifts between repeats), the median reported.
 */
export async function peersScenario(embedded: { url: string } | undefined, sizes: PeerSizes): Promise<string[]> {
  const runs: Figures[][] = SIDES.map(() => []);
  for (let r = 0; r < sizes.repeat; r++) {
    for (let k = 0; k < SIDES.length; k++) {
      const s = (r + k) % SIDES.length;
      const side = SIDES[s]!;
      // Lower case: CREATE DATABASE folds the name, and DBOS would create the URL's spelling itself.
      runs[s]!.push(await measure(side.start, `peer_${side.name.toLowerCase().replace(/\W/g, "_")}`, embedded, sizes, sizes.writes && r === 0));
    }
  }
  const [svc, ...peers] = runs as [Figures[], ...Figures[][]];
  const names = SIDES.map((s) => s.name);
  const all = (figs: Figures[], pick: (f: Figures) => number[]) => figs.flatMap(pick);
  const ratioLine = (label: string, value: (f: Figures) => number) =>
    `  svc ÷ peer, ${label}: ` +
    peers
      .map((figs, i) => {
        const ratios = figs.map((f, r) => value(svc[r]!) / value(f));
        return `${names[i + 1]} ${fmt(median(ratios))} (${ratios.map((x) => x.toFixed(2)).join(", ")})`;
      })
      .join("; ");

  const out = [
    `## Peers (issue 19 §4): svc, graphile-worker ${version("graphile-worker")} and DBOS Transact ${version("@dbos-inc/dbos-sdk")} on one Postgres, each in a fresh database with its worker in this process; ${sizes.repeat} repeats in rotating order, each after ${sizes.warmup} warm-up units; ratios are svc ÷ peer within a repeat, median (all)`,
    `one at a time, trigger → done (${sizes.runs} per side and repeat):`,
    ...runs.map((figs, i) => "  " + line(`${names[i]}`, percentiles(all(figs, (f) => f.single)))),
    ratioLine("p50 latency (below 1: svc faster)", (f) => p50(f.single)),
    `${LANES} in flight, trigger → done (${sizes.inFlight} per side and repeat):`,
    ...runs.map((figs, i) => "  " + line(`${names[i]} ${Math.round(median(figs.map((f) => f.flightRate))).toLocaleString("en-US")}/s`, percentiles(all(figs, (f) => f.flight)))),
    ratioLine("throughput (above 1: svc faster)", (f) => f.flightRate),
    `wait → resume, one at a time: signal sent → the code after the wait runs (${sizes.waits} per side and repeat):`,
    ...runs.map((figs, i) => "  " + line(`${names[i]}`, percentiles(all(figs, (f) => f.resume)))),
    ratioLine("p50 latency (below 1: svc faster)", (f) => p50(f.resume)),
  ];
  const extras = runs.flatMap((figs) => (figs[0]?.extra ?? []).map((e, j) => ({ label: e.label, samples: figs.flatMap((f) => f.extra[j]!.samples) })));
  if (extras.length) out.push("other paths to the same points:", ...extras.map((e) => "  " + line(e.label, percentiles(e.samples))));
  const writes = runs.map((figs, i) => ({ name: names[i]!, writes: figs[0]?.writes }));
  if (writes.some((w) => w.writes)) {
    out.push(`what each persists, from Postgres's counters in its database (commits include read-only transactions; ${WRITES_RUNS} units in ${LANES} lanes, ${WRITES_WAITS} resumes one at a time):`);
    for (const { name, writes: w } of writes) {
      if (!w) continue;
      for (const [unit, x] of [["per unit of work", w.run], ["per resume, to the unit's end", w.resume]] as const) {
        out.push(`  ${name} ${unit}: ${x.rows.toFixed(1)} rows written, ${x.commits.toFixed(2)} commits`, ...x.tables.map((t) => `    ${t}`));
      }
    }
  }
  return out;
}
