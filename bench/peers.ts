import { readFileSync } from "node:fs";
import type { PeerSide } from "./peer-side.ts";
import { burst, inTurns, lanes, resumeEach, runEach } from "./peer-turns.ts";
import { writeSnapshot, writesPerUnit } from "./peer-writes.ts";
import { benchDatabase, type BenchDatabase } from "./setup.ts";
import { settle } from "./settle.ts";
import { fmt, line, median, percentiles } from "./stats.ts";

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
/**
 * A side's turn at the one-at-a-time measurements: this many units, or waits set up and then
 * resumed one by one. Short enough (a second or less) that the machine does not drift within a
 * round, and that no wait is old enough for a DBOS wait's 10 s poll; long enough that switching
 * sides costs nothing measurable (only a turn's first few units are slower, on every side alike).
 */
const BLOCK = 50;
/** A side's turn in 16 lanes: this many units, 1–2 s at the sides' rates here. */
const BURST = 1500;
/** A side's other paths to the same points (its `extra`), per repeat, spread over its one-at-a-time turns. */
const EXTRA = 500;
/** Warm-up resumes per side (at most: no more than the warm-up units). */
const WARMUP_RESUMES = 300;
const WRITES_RUNS = 1000;
const WRITES_WAITS = 200;

/** The sides, loaded only when this scenario runs (DBOS registers its workflows on import). */
const SIDES: { name: string; start: (url: string) => Promise<PeerSide> }[] = [
  { name: "svc", start: async (url) => (await import("./peer-svc.ts")).svcSide(url) as Promise<PeerSide> },
  { name: "graphile-worker", start: async (url) => (await import("./peer-graphile-worker.ts")).graphileWorkerSide(url) as Promise<PeerSide> },
  { name: "DBOS", start: async (url) => (await import("./peer-dbos.ts")).dbosSide(url) as Promise<PeerSide> },
];

/** One side's figures in one repeat; `single` and `resume` by round, `bursts` one per round. */
interface Figures {
  single: number[][];
  flight: number[];
  bursts: { units: number; ms: number }[];
  resume: number[][];
  extra: { label: string; samples: number[] }[];
  writes?: { run: ReturnType<typeof writesPerUnit>; resume: ReturnType<typeof writesPerUnit> };
}

const flightRate = (f: Figures) => (f.bursts.reduce((s, b) => s + b.units, 0) / f.bursts.reduce((s, b) => s + b.ms, 0)) * 1000;

/** Units of `total` in the turn of round `round`, at `size` a turn. */
const share = (total: number, size: number, round: number) => Math.max(0, Math.min(size, total - round * size));

/**
 * One repeat: every side started at once, each in a fresh database of its own and warmed up in
 * turn; then each measurement taken in turns (`inTurns`). The writes are counted side after side:
 * they are rows and commits in a side's own database, not times.
 */
async function measureTogether(embedded: { url: string } | undefined, sizes: PeerSizes, offset: number, countWrites: boolean): Promise<Figures[]> {
  const started: { db: BenchDatabase; side?: PeerSide }[] = [];
  try {
    for (const { name, start } of SIDES) {
      // Lower case: CREATE DATABASE folds the name, and DBOS would create the URL's spelling itself.
      const db = await benchDatabase(`peer_${name.toLowerCase().replace(/\W/g, "_")}`, embedded);
      const entry: (typeof started)[number] = { db };
      started.push(entry);
      entry.side = await start(db.url);
    }
    const sides = started.map((s) => s.side!);
    for (const side of sides) {
      await lanes(sizes.warmup, LANES, () => side.runOne());
      await resumeEach(side, await side.waiting(Math.min(sizes.warmup, WARMUP_RESUMES)));
    }
    await settle(started[0]!.db.adminUrl);
    const figs: Figures[] = sides.map(() => ({ single: [], flight: [], bursts: [], resume: [], extra: [] }));

    // One at a time; each side's other paths (`extra`) in its turn, after its units.
    const singleRounds = Math.ceil(sizes.runs / BLOCK);
    const extraPerTurn = Math.ceil(Math.min(sizes.waits, EXTRA) / singleRounds);
    await inTurns(sides.length, singleRounds, offset, async (s, round) => {
      const samples: number[] = [];
      await runEach(sides[s]!, share(sizes.runs, BLOCK, round), samples);
      figs[s]!.single.push(samples);
      const n = share(Math.min(sizes.waits, EXTRA), extraPerTurn, round);
      const extra = (n > 0 && (await sides[s]!.extra?.(n))) || [];
      extra.forEach((e, j) => (figs[s]!.extra[j] ??= { label: e.label, samples: [] }).samples.push(...e.samples));
    });

    await inTurns(sides.length, Math.ceil(sizes.inFlight / BURST), offset, async (s, round) => {
      const units = share(sizes.inFlight, BURST, round);
      figs[s]!.bursts.push({ units, ms: await burst(sides[s]!, units, LANES, figs[s]!.flight) });
    });

    // A turn sets up its waits, then resumes them: no side has units waiting outside its turn.
    await inTurns(sides.length, Math.ceil(sizes.waits / BLOCK), offset, async (s, round) => {
      const samples: number[] = [];
      await resumeEach(sides[s]!, await sides[s]!.waiting(share(sizes.waits, BLOCK, round)), samples);
      figs[s]!.resume.push(samples);
    });

    if (countWrites) {
      for (const [s, side] of sides.entries()) {
        const url = started[s]!.db.url;
        const s0 = await writeSnapshot(url);
        await lanes(WRITES_RUNS, LANES, () => side.runOne());
        const s1 = await writeSnapshot(url);
        const waits = await side.waiting(WRITES_WAITS);
        const s2 = await writeSnapshot(url);
        await resumeEach(side, waits);
        const s3 = await writeSnapshot(url);
        figs[s]!.writes = { run: writesPerUnit(s0, s1, WRITES_RUNS), resume: writesPerUnit(s2, s3, WRITES_WAITS) };
      }
    }
    return figs;
  } finally {
    await closeAll(started);
  }
}

/** Every side, then its database, closed even when another's close failed; the failures logged, the first thrown. */
async function closeAll(started: { db: BenchDatabase; side?: PeerSide }[]): Promise<void> {
  const errors: unknown[] = [];
  for (const { db, side } of [...started].reverse()) {
    for (const close of [() => side?.close(), () => db.close()]) {
      try {
        await close();
      } catch (error) {
        console.error("peers: closing a side failed:", error);
        errors.push(error);
      }
    }
  }
  if (errors.length) throw errors[0];
}

function version(pkg: string): string {
  return (JSON.parse(readFileSync(new URL(`../node_modules/${pkg}/package.json`, import.meta.url), "utf8")) as { version: string }).version;
}

const p50 = (xs: number[]) => percentiles(xs).p50;

/** The interquartile range of a few figures (one per round). */
function quartiles(xs: number[]): string {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return `${at(0.25).toFixed(2)}–${at(0.75).toFixed(2)}`;
}

/**
 * svc next to graphile-worker and DBOS Transact on the same Postgres, in the same run (issue 19
 * §4): trigger → done one at a time, 16 in flight, and wait → resume. The machine drifts over
 * minutes by more than the sides differ (±30 % here, and others' work on a shared server), so a
 * side measured whole after another compares machines, not sides. Each repeat therefore starts all
 * sides at once, in fresh databases, and they take turns within every measurement (blocks of
 * units, bursts of 16 lanes), the side that starts rotating. Ratios are svc ÷ peer within a
 * repeat, the median reported, with the spread of the ratios round by round.
 */
export async function peersScenario(embedded: { url: string } | undefined, sizes: PeerSizes): Promise<string[]> {
  const runs: Figures[][] = SIDES.map(() => []);
  for (let r = 0; r < sizes.repeat; r++) {
    const figs = await measureTogether(embedded, sizes, r, sizes.writes && r === 0);
    figs.forEach((f, s) => runs[s]!.push(f));
  }
  const [svc, ...peers] = runs as [Figures[], ...Figures[][]];
  const names = SIDES.map((s) => s.name);
  const all = (figs: Figures[], pick: (f: Figures) => number[]) => figs.flatMap(pick);
  /** `value` of a repeat's figures; `byRound` the same of each round's (a round's ratio compares turns taken seconds apart). */
  const ratioLine = (label: string, value: (f: Figures) => number, byRound: (f: Figures) => number[]) =>
    `  svc ÷ peer, ${label}: ` +
    peers
      .map((figs, i) => {
        const ratios = figs.map((f, r) => value(svc[r]!) / value(f));
        const rounds = figs.flatMap((f, r) => byRound(f).map((x, k) => byRound(svc[r]!)[k]! / x));
        return `${names[i + 1]} ${fmt(median(ratios))} (${ratios.map((x) => x.toFixed(2)).join(", ")}; rounds p25–p75 ${quartiles(rounds)})`;
      })
      .join("; ");

  const out = [
    `## Peers (issue 19 §4): svc, graphile-worker ${version("graphile-worker")} and DBOS Transact ${version("@dbos-inc/dbos-sdk")} on one Postgres, each in a fresh database with its worker in this process; ` +
      `${sizes.repeat} repeats, in each all sides started at once and warmed up (${sizes.warmup} units each), then every measurement taken in turns, the side that starts rotating by round; ratios are svc ÷ peer within a repeat, median (all; rounds' spread)`,
    `one at a time, trigger → done (${sizes.runs} per side and repeat, turns of ${BLOCK}):`,
    ...runs.map((figs, i) => "  " + line(`${names[i]}`, percentiles(all(figs, (f) => f.single.flat())))),
    ratioLine("p50 latency (below 1: svc faster)", (f) => p50(f.single.flat()), (f) => f.single.map(p50)),
    `${LANES} in flight, trigger → done (${sizes.inFlight} per side and repeat, turns of ${BURST}; rate: units ÷ the turns' time):`,
    ...runs.map((figs, i) => "  " + line(`${names[i]} ${Math.round(median(figs.map(flightRate))).toLocaleString("en-US")}/s`, percentiles(all(figs, (f) => f.flight)))),
    ratioLine("throughput (above 1: svc faster)", flightRate, (f) => f.bursts.map((b) => b.units / b.ms)),
    `wait → resume, one at a time: signal sent → the code after the wait runs (${sizes.waits} per side and repeat, turns of ${BLOCK}, each setting up its waits first):`,
    ...runs.map((figs, i) => "  " + line(`${names[i]}`, percentiles(all(figs, (f) => f.resume.flat())))),
    ratioLine("p50 latency (below 1: svc faster)", (f) => p50(f.resume.flat()), (f) => f.resume.map(p50)),
  ];
  const extras = runs.flatMap((figs) => (figs[0]?.extra ?? []).map((e, j) => ({ label: e.label, samples: figs.flatMap((f) => f.extra[j]!.samples) })));
  if (extras.length) out.push("other paths to the same points (in each side's one-at-a-time turns, after its units):", ...extras.map((e) => "  " + line(e.label, percentiles(e.samples))));
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
