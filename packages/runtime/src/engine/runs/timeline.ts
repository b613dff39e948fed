import type { Queryable } from "../../db/queryable.ts";
import type { LedgerKind } from "../../ledger/entries.ts";
import { readRunLogs, type RunLog } from "../run-logs/read-run-logs.ts";
import type { WaitpointType } from "../waitpoints/statuses.ts";
import type { RunStatus } from "./statuses.ts";
import {
  timelineAttempts, timelineChildren, timelineLedger, timelineRun,
  type TimelineAttemptRow, type TimelineChildRow, type TimelineLedgerRow, type TimelineRunRow,
} from "./timeline-store.ts";

/** At most this many entries are shown; a longer timeline is cut after its first ones (`truncated`). */
export const MAX_TIMELINE_ENTRIES = 500;

/** At most this many of a run's log lines are read with its timeline (the first ones). */
export const MAX_TIMELINE_LOGS = 1_000;

/** A run's stored log lines, as its timeline carries them. */
export interface TimelineLogs {
  /** In the order they were logged. */
  lines: RunLog[];
  /** Lines dropped past the run's cap (one line from svc says where). */
  dropped: number;
  /** More lines are stored than MAX_TIMELINE_LOGS: these are the first ones. */
  truncated: boolean;
}

interface EntryBase {
  label: string;
  startedAt: Date;
  /** Null while it goes on. */
  endedAt: Date | null;
  durationMs: number | null;
  /**
   * The start is not recorded, only bounded: a step's is the last recorded moment before its result
   * (so its duration may include code between durable calls); a later attempt that suspended
   * starts, at the latest, when its retry was due (only its last execution's start is recorded).
   */
  startEstimated: boolean;
}

export interface AttemptDetail {
  number: number;
  workerId: string | null;
  errorName: string | null;
  errorMessage: string | null;
  /** A failed attempt that is retried: when the next attempt was due. */
  retryAt: Date | null;
  /** When its last execution began (after a suspension: when the run was taken again); null while it goes on. */
  lastExecutionStartedAt: Date | null;
}

export interface StepDetail {
  stepKey: string;
  epoch: number;
  name: string | null;
  ok: boolean;
  errorMessage: string | null;
}

export interface WaitDetail {
  stepKey: string;
  epoch: number;
  /** What the code waited on (the ledger's kind). */
  type: LedgerKind;
  /** What the code asked for: a token id, `for:<ms>ms` / `until:<iso>`, a child task id, a session. */
  target: string | null;
  waitpointId: string | null;
  waitpointType: WaitpointType | null;
  /** Whether the wait checkpointed the run (WAITING, claim released); false: its waitpoint had already finished. */
  suspended: boolean;
  /**
   * When the waitpoint completed and the run became resumable (null: still waiting). The worker
   * takes the run within milliseconds when one is free; that moment itself is recorded only for
   * an attempt's last execution (AttemptDetail.lastExecutionStartedAt).
   */
  resumedAt: Date | null;
  /** A token's timeout, or a sleep's wake-up time. */
  timeoutAt: Date | null;
  childRunId: string | null;
  batchId: string | null;
  errorMessage: string | null;
}

export interface ChildDetail {
  runId: string;
  taskIdentifier: string;
  status: RunStatus;
  batchId: string | null;
  batchIndex: number | null;
  /** When the child itself began executing (the entry spans trigger to end). */
  childStartedAt: Date | null;
}

/** One bar of the timeline. Statuses are uppercase, as svc stores them (attempt and run statuses; waits and steps: COMPLETED, FAILED, TIMED_OUT, WAITING). */
export type TimelineEntry =
  | (EntryBase & { kind: "attempt"; status: string; detail: AttemptDetail })
  | (EntryBase & { kind: "step"; status: "COMPLETED" | "FAILED"; detail: StepDetail })
  | (EntryBase & { kind: "wait"; status: "WAITING" | "COMPLETED" | "FAILED" | "TIMED_OUT"; detail: WaitDetail })
  | (EntryBase & { kind: "child"; status: RunStatus; detail: ChildDetail });

export interface RunTimeline {
  run: {
    id: string;
    taskIdentifier: string;
    status: RunStatus;
    createdAt: Date;
    startedAt: Date | null;
    finishedAt: Date | null;
    parentRunId: string | null;
    rootRunId: string | null;
  };
  /** By start time. */
  entries: TimelineEntry[];
  /** More entries were recorded than MAX_TIMELINE_ENTRIES: these are the first ones. */
  truncated: boolean;
  /** What the run logged (runTimeline reads it; absent: not read). */
  logs?: TimelineLogs;
}

/**
 * A run's timeline, drawn from what its rows record: attempts, the steps and waits of its ledger
 * (every epoch), its child runs, and what it logged. Null when the run is not in the environment.
 * Six bounded statements; nothing is written.
 */
export async function runTimeline(db: Queryable, environmentId: string, runId: string): Promise<RunTimeline | null> {
  const run = await timelineRun(db, environmentId, runId);
  if (!run) return null;
  // One more than shown from each table: whether anything was left out.
  const limit = MAX_TIMELINE_ENTRIES + 1;
  const [attempts, ledger, children, logs] = await Promise.all([
    timelineAttempts(db, runId, limit),
    timelineLedger(db, runId, limit),
    timelineChildren(db, environmentId, runId, limit),
    readRunLogs(db, environmentId, runId, MAX_TIMELINE_LOGS + 1),
  ]);
  const timeline = buildTimeline({ run, attempts, ledger, children }, MAX_TIMELINE_ENTRIES);
  timeline.logs = { lines: logs.lines.slice(0, MAX_TIMELINE_LOGS), dropped: logs.dropped, truncated: logs.lines.length > MAX_TIMELINE_LOGS };
  return timeline;
}

const ACTIVE_ATTEMPT_STATUSES: readonly RunStatus[] = ["DEQUEUED", "EXECUTING", "WAITING"];

/** The timeline of rows as timeline-store.ts reads them (pure: unit-testable with plain values). */
export function buildTimeline(
  rows: { run: TimelineRunRow; attempts: TimelineAttemptRow[]; ledger: TimelineLedgerRow[]; children: TimelineChildRow[] },
  max: number,
): RunTimeline {
  const { run, ledger } = rows;
  const waits = ledger.filter((l) => l.kind !== "step").map((l) => ({ row: l, suspended: suspendedRun(l) }));
  const attempts = attemptEntries(run, rows.attempts, waits);
  const moments = recordedMoments(run, attempts, ledger, waits);
  const waitOf = new Map(waits.map((w) => [w.row, w]));
  const entries: TimelineEntry[] = [
    ...attempts,
    // In ledger order (call order), which breaks ties of start time below.
    ...ledger.map((l) => (l.kind === "step" ? stepEntry(l, moments) : waitEntry(waitOf.get(l)!))),
    ...rows.children.map(childEntry),
  ];
  const sequence = new Map(entries.map((e, i) => [e, i]));
  // By start; at the same moment an attempt before what happened in it, the rest as listed above.
  const attemptFirst = (e: TimelineEntry) => (e.kind === "attempt" ? 0 : 1);
  entries.sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime() || attemptFirst(a) - attemptFirst(b) || sequence.get(a)! - sequence.get(b)!);
  return {
    run: {
      id: run.id,
      taskIdentifier: run.task_identifier,
      status: run.status,
      createdAt: run.created_at,
      startedAt: run.started_at,
      finishedAt: run.finished_at,
      parentRunId: run.parent_run_id,
      rootRunId: run.root_run_id,
    },
    entries: entries.slice(0, max),
    truncated: entries.length > max,
  };
}

/**
 * Whether a wait checkpointed the run. Registering a wait on a finished waitpoint records it
 * resolved, with resolved_at = created_at (one parameter, one statement); a wait that suspended
 * is resolved later by the completion, at the completion's time, or is still unresolved. (A
 * completion in the very millisecond of the registration reads as no suspension, of no length.)
 */
function suspendedRun(l: TimelineLedgerRow): boolean {
  return !l.resolved || l.resolved_at === null || l.resolved_at.getTime() !== l.created_at.getTime();
}

type Wait = { row: TimelineLedgerRow; suspended: boolean };

function attemptEntries(run: TimelineRunRow, rows: TimelineAttemptRow[], waits: Wait[]): TimelineEntry[] {
  const entries: TimelineEntry[] = [];
  let previous: TimelineAttemptRow | undefined;
  for (const row of rows) {
    const start = attemptStart(run, row.number, previous, row.started_at, waits) ?? { at: row.started_at, estimated: false };
    entries.push(attempt(row.number, start, row.finished_at, row.status, {
      number: row.number,
      workerId: row.worker_id,
      errorName: row.error_name,
      errorMessage: row.error_message,
      retryAt: row.retry_at,
      lastExecutionStartedAt: row.started_at,
    }));
    previous = row;
  }
  // The attempt under way (or ended with the run, e.g. canceled while waiting) has no row yet:
  // rows are written as attempts end.
  const current = run.attempt_number;
  const final = !ACTIVE_ATTEMPT_STATUSES.includes(run.status) && run.finished_at !== null;
  if (current >= 1 && current > (previous?.number ?? 0) && (ACTIVE_ATTEMPT_STATUSES.includes(run.status) || final)) {
    const start = attemptStart(run, current, previous?.number === current - 1 ? previous : undefined, null, waits);
    if (start) {
      entries.push(attempt(current, start, final ? run.finished_at : null, run.status, {
        number: current, workerId: final ? null : run.worker_id, errorName: null, errorMessage: null, retryAt: null, lastExecutionStartedAt: null,
      }));
    }
  }
  return entries;
}

function attempt(number: number, start: { at: Date; estimated: boolean }, endedAt: Date | null, status: string, detail: AttemptDetail): TimelineEntry {
  return { kind: "attempt", label: `Attempt ${number}`, startedAt: start.at, endedAt, durationMs: span(start.at, endedAt), startEstimated: start.estimated, status, detail };
}

/**
 * When an attempt began. The first: when the run started. A later one: its row's started_at,
 * which is when its last execution began, unless a wait suspended it after its predecessor
 * ended, in which case only a bound is known: when its predecessor ended or its retry was due.
 */
function attemptStart(
  run: TimelineRunRow,
  number: number,
  previous: TimelineAttemptRow | undefined,
  lastExecutionStart: Date | null,
  waits: Wait[],
): { at: Date; estimated: boolean } | null {
  if (number === 1 && run.started_at) return { at: run.started_at, estimated: false };
  const previousEnd = previous ? latest(previous.finished_at, previous.retry_at) : null;
  if (lastExecutionStart === null) return previousEnd ? { at: previousEnd, estimated: true } : null;
  if (!previousEnd) return { at: lastExecutionStart, estimated: false };
  const suspendedMeanwhile = waits.some(
    (w) => w.suspended && w.row.created_at.getTime() >= previousEnd.getTime() && w.row.created_at.getTime() < lastExecutionStart.getTime(),
  );
  return suspendedMeanwhile ? { at: previousEnd, estimated: true } : { at: lastExecutionStart, estimated: false };
}

/**
 * Every moment the rows record of the run's own executions, ascending: a step began after the
 * latest of them before its result was recorded (executions are sequential; only steps run
 * concurrently by the task's code break that bound).
 */
function recordedMoments(run: TimelineRunRow, attempts: TimelineEntry[], ledger: TimelineLedgerRow[], waits: Wait[]): number[] {
  const moments: number[] = [];
  if (run.started_at) moments.push(run.started_at.getTime());
  for (const a of attempts) {
    if (a.kind !== "attempt") continue;
    moments.push(a.startedAt.getTime());
    if (a.detail.lastExecutionStartedAt) moments.push(a.detail.lastExecutionStartedAt.getTime());
    if (a.endedAt) moments.push(a.endedAt.getTime());
  }
  for (const l of ledger) moments.push(l.created_at.getTime());
  for (const w of waits) if (w.suspended && w.row.resolved_at) moments.push(w.row.resolved_at.getTime());
  return moments.sort((a, b) => a - b);
}

function stepEntry(l: TimelineLedgerRow, moments: number[]): TimelineEntry {
  const recordedAt = l.created_at.getTime();
  // The latest moment before the record, other than the record itself (moments are sorted).
  let start = recordedAt;
  let skippedSelf = false;
  for (let i = moments.length - 1; i >= 0; i--) {
    const m = moments[i]!;
    if (m > recordedAt) continue;
    if (m === recordedAt && !skippedSelf) {
      skippedSelf = true;
      continue;
    }
    start = m;
    break;
  }
  const ok = l.ok !== false;
  return {
    kind: "step",
    label: l.target ?? l.step_key,
    startedAt: new Date(start),
    endedAt: l.created_at,
    durationMs: recordedAt - start,
    startEstimated: true,
    status: ok ? "COMPLETED" : "FAILED",
    detail: { stepKey: l.step_key, epoch: l.epoch, name: l.target, ok, errorMessage: l.error_message },
  };
}

const WAIT_LABELS: Record<LedgerKind, string> = {
  token: "wait.forToken",
  datetime: "wait",
  child: "triggerAndWait",
  batch: "batchTriggerAndWait",
  session: "session wait",
  step: "step",
};

function waitEntry({ row: l, suspended }: Wait): TimelineEntry {
  const endedAt = l.resolved ? (l.resolved_at ?? l.created_at) : null;
  const status = !l.resolved ? "WAITING" : l.ok === false ? (l.waitpoint_status === "TIMED_OUT" ? "TIMED_OUT" : "FAILED") : "COMPLETED";
  const label =
    l.kind === "datetime" ? (l.target?.startsWith("until:") ? "wait.until" : "wait.for")
    : l.kind === "child" || l.kind === "batch" ? `${WAIT_LABELS[l.kind]} ${l.target ?? ""}`.trim()
    : WAIT_LABELS[l.kind];
  return {
    kind: "wait",
    label,
    startedAt: l.created_at,
    endedAt,
    durationMs: span(l.created_at, endedAt),
    startEstimated: false,
    status,
    detail: {
      stepKey: l.step_key,
      epoch: l.epoch,
      type: l.kind,
      target: l.target,
      waitpointId: l.waitpoint_id,
      waitpointType: l.waitpoint_type,
      suspended,
      resumedAt: suspended ? endedAt : null,
      timeoutAt: l.timeout_at,
      childRunId: l.completed_by_run_id,
      batchId: l.completed_by_batch_id,
      errorMessage: l.error_message,
    },
  };
}

function childEntry(c: TimelineChildRow): TimelineEntry {
  return {
    kind: "child",
    label: c.task_identifier,
    startedAt: c.created_at,
    endedAt: c.finished_at,
    durationMs: span(c.created_at, c.finished_at),
    startEstimated: false,
    status: c.status,
    detail: { runId: c.id, taskIdentifier: c.task_identifier, status: c.status, batchId: c.batch_id, batchIndex: c.batch_index, childStartedAt: c.started_at },
  };
}

function span(start: Date, end: Date | null): number | null {
  return end === null ? null : Math.max(0, end.getTime() - start.getTime());
}

function latest(a: Date | null, b: Date | null): Date | null {
  if (!a) return b;
  if (!b) return a;
  return a.getTime() >= b.getTime() ? a : b;
}
