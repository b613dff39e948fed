import type { RunLog } from "../run-logs/read-run-logs.ts";
import type { RunTimeline, TimelineEntry } from "./timeline.ts";

// A run's timeline and log as one tree: attempts, and under each what happened in it (steps,
// waits, runs it triggered, log lines) by time; lines logged inside a step's function under that
// step. Pure: the dashboard draws it, the trace takes each line's parent from it.

export type TimelineItem = { kind: "entry"; entry: TimelineEntry } | { kind: "log"; log: RunLog };

export interface TimelineRow {
  item: TimelineItem;
  /** 0: an attempt (or what belongs to none), 1: what happened in an attempt, 2: a line logged inside a step. */
  depth: number;
  /** The row it hangs under: its attempt, or its step. */
  parent: TimelineEntry | null;
}

type Attempt = Extract<TimelineEntry, { kind: "attempt" }>;
type Step = Extract<TimelineEntry, { kind: "step" }>;

/** The attempt an entry happened in: the last that had begun by its start and had not ended before it. */
export function attemptAt(attempts: Attempt[], at: Date): Attempt | undefined {
  return attempts.filter((a) => a.startedAt.getTime() <= at.getTime() && (a.endedAt === null || a.endedAt.getTime() >= at.getTime())).at(-1);
}

/** `#3` → 3; keyed and hook records have no ordinal. */
function ordinal(stepKey: string): number | null {
  const match = /^#(\d+)$/.exec(stepKey);
  return match ? Number(match[1]) : null;
}

/**
 * The step a line was logged inside: of the steps named as the line says (`step.run("name")`) in
 * the line's ledger epoch, the latest recorded before the durable call the line precedes.
 */
export function stepOfLog(steps: Step[], log: RunLog): Step | undefined {
  if (!log.step || !log.ledger) return undefined;
  const next = ordinal(log.ledger.key);
  if (next === null) return undefined;
  let found: Step | undefined;
  for (const step of steps) {
    if (step.detail.epoch !== log.ledger.epoch || `step.run("${step.detail.name ?? ""}")` !== log.step) continue;
    const n = ordinal(step.detail.stepKey);
    if (n !== null && n < next && (!found || n > ordinal(found.detail.stepKey)!)) found = step;
  }
  return found;
}

/** Where each line of `logs` hangs: its attempt (by number) and, logged inside a step, that step. */
export function placeLogs(timeline: RunTimeline, logs: RunLog[]): Map<RunLog, { attempt: Attempt | undefined; step: Step | undefined }> {
  const attempts = new Map(timeline.entries.filter((e): e is Attempt => e.kind === "attempt").map((a) => [a.detail.number, a]));
  const steps = timeline.entries.filter((e): e is Step => e.kind === "step");
  return new Map(logs.map((log) => [log, { attempt: attempts.get(log.attempt), step: stepOfLog(steps, log) }]));
}

const timeOf = (item: TimelineItem) => (item.kind === "entry" ? item.entry.startedAt : item.log.loggedAt).getTime();

/**
 * At the same moment, a line comes before the durable call it precedes and after those before
 * it; otherwise items keep the order they were given in (entries by start, lines as logged).
 */
function tie(a: TimelineItem, b: TimelineItem): number {
  const position = (item: TimelineItem): [number, number] | null => {
    if (item.kind === "log") {
      const n = item.log.ledger ? ordinal(item.log.ledger.key) : null;
      return n === null ? null : [item.log.ledger!.epoch, n - 0.5];
    }
    const e = item.entry;
    if (e.kind !== "step" && e.kind !== "wait") return null;
    const n = ordinal(e.detail.stepKey);
    return n === null ? null : [e.detail.epoch, n];
  };
  const pa = position(a);
  const pb = position(b);
  if (!pa || !pb || pa[0] !== pb[0]) return 0;
  return pa[1] - pb[1];
}

function byTime(items: TimelineItem[]): TimelineItem[] {
  return items
    .map((item, i) => ({ item, i }))
    .sort((x, y) => timeOf(x.item) - timeOf(y.item) || tie(x.item, y.item) || x.i - y.i)
    .map((x) => x.item);
}

/** The timeline and `logs` as rows of a tree, depth first. */
export function timelineRows(timeline: RunTimeline, logs: RunLog[]): TimelineRow[] {
  const attempts = timeline.entries.filter((e): e is Attempt => e.kind === "attempt");
  const placed = placeLogs(timeline, logs);
  const under = new Map<TimelineEntry | null, TimelineItem[]>();
  const add = (parent: TimelineEntry | null, item: TimelineItem) => {
    const list = under.get(parent);
    if (list) list.push(item);
    else under.set(parent, [item]);
  };
  for (const entry of timeline.entries) add(entry.kind === "attempt" ? null : (attemptAt(attempts, entry.startedAt) ?? null), { kind: "entry", entry });
  for (const log of logs) {
    const place = placed.get(log)!;
    add(place.step ?? place.attempt ?? null, { kind: "log", log });
  }
  const rows: TimelineRow[] = [];
  const walk = (parent: TimelineEntry | null, depth: number) => {
    for (const item of byTime(under.get(parent) ?? [])) {
      rows.push({ item, depth, parent });
      if (item.kind === "entry" && under.has(item.entry)) walk(item.entry, depth + 1);
    }
  };
  walk(null, 0);
  return rows;
}
