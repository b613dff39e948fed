/** Run statuses: Trigger.dev's 2025-07-16 API vocabulary, which the published SDK validates. */
export const RUN_STATUSES = [
  "PENDING_VERSION",
  "QUEUED",
  "DEQUEUED",
  "EXECUTING",
  "WAITING",
  "COMPLETED",
  "CANCELED",
  "FAILED",
  "CRASHED",
  "SYSTEM_FAILURE",
  "DELAYED",
  "EXPIRED",
  "TIMED_OUT",
] as const;

export type RunStatus = (typeof RUN_STATUSES)[number];

/** Trigger.dev's legacy status names, still accepted in `filter[status]`, and what each means now. */
export const LEGACY_RUN_STATUSES: Readonly<Record<string, RunStatus>> = {
  WAITING_FOR_DEPLOY: "PENDING_VERSION",
  REATTEMPTING: "EXECUTING",
  FROZEN: "WAITING",
  INTERRUPTED: "FAILED",
};

export const FINAL_STATUSES: readonly RunStatus[] = [
  "COMPLETED",
  "CANCELED",
  "FAILED",
  "CRASHED",
  "SYSTEM_FAILURE",
  "EXPIRED",
  "TIMED_OUT",
];

/** The one transition table. Anything not listed is refused. */
export const TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  PENDING_VERSION: ["QUEUED", "CANCELED", "EXPIRED"],
  DELAYED: ["QUEUED", "CANCELED", "EXPIRED"],
  QUEUED: ["DEQUEUED", "EXECUTING", "CANCELED", "EXPIRED", "PENDING_VERSION"],
  DEQUEUED: ["EXECUTING", "QUEUED", "CANCELED"],
  EXECUTING: ["COMPLETED", "FAILED", "CRASHED", "SYSTEM_FAILURE", "TIMED_OUT", "WAITING", "QUEUED", "CANCELED", "EXECUTING"],
  WAITING: ["EXECUTING", "CANCELED"],
  COMPLETED: [],
  CANCELED: [],
  FAILED: [],
  CRASHED: [],
  SYSTEM_FAILURE: [],
  EXPIRED: [],
  TIMED_OUT: [],
};

export function isRunStatus(value: string): value is RunStatus {
  return (RUN_STATUSES as readonly string[]).includes(value);
}

export function isFinal(status: RunStatus): boolean {
  return FINAL_STATUSES.includes(status);
}

export function canTransition(from: RunStatus, to: RunStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** The statuses from which `to` may be reached; the WHERE clause of a guarded update. */
export function sourcesOf(to: RunStatus): RunStatus[] {
  return RUN_STATUSES.filter((from) => TRANSITIONS[from].includes(to));
}

/**
 * Final statuses whose run no longer answers its idempotency key (a new trigger with the key makes
 * a new run): a failed run frees it, as do EXPIRED and TIMED_OUT; CANCELED and COMPLETED keep it.
 */
export const FREES_IDEMPOTENCY_KEY: readonly RunStatus[] = ["FAILED", "CRASHED", "SYSTEM_FAILURE", "EXPIRED", "TIMED_OUT"];

export function freesIdempotencyKey(status: RunStatus): boolean {
  return FREES_IDEMPOTENCY_KEY.includes(status);
}

/** Trigger.dev's boolean helpers (EXPIRED and TIMED_OUT are neither completed nor failed). */
export function statusFlags(status: RunStatus) {
  const isCompleted = ["COMPLETED", "CANCELED", "FAILED", "CRASHED", "SYSTEM_FAILURE"].includes(status);
  return {
    isQueued: status === "QUEUED" || status === "DELAYED" || status === "PENDING_VERSION",
    isExecuting: status === "EXECUTING" || status === "DEQUEUED",
    isWaiting: status === "WAITING",
    isCompleted,
    isSuccess: status === "COMPLETED",
    isFailed: isCompleted && status !== "COMPLETED",
    isCancelled: status === "CANCELED",
  };
}

/**
 * One guarded status write: the statuses its WHERE clause accepts and the status it sets. Every
 * TypeScript write of runs.status lives in src/engine/runs/ (test/run-status-writes.test.ts
 * enforces it); the modules in runs/transitions/ declare theirs with `transition`, which refuses at
 * module load a move the table does not allow, and build their guard from it with `statusGuard`.
 *
 * The one sanctioned SQL-side transition: svc_complete_waitpoint (sql/functions/) offers a run
 * whose waits all resolved to a worker, WAITING → EXECUTING, guarded by `r.status = 'WAITING'`
 * (the same test checks the table allows it).
 */
export interface Transition {
  readonly from: readonly RunStatus[];
  readonly to: RunStatus;
}

export function transition(from: readonly RunStatus[], to: RunStatus): Transition {
  const refused = from.filter((f) => !canTransition(f, to));
  if (refused.length > 0) throw new Error(`transition table refuses ${refused.join(", ")} -> ${to}`);
  return { from, to };
}

/**
 * The guard `column = 'A'` or `column IN ('A', 'B')` over a transition's sources, as constant SQL
 * text (interpolated once, at module load, so prepared statements keep one text).
 */
export function statusGuard(column: string, t: Transition, negate = false): string {
  const list = t.from.map((s) => `'${s}'`).join(", ");
  if (t.from.length === 1) return `${column} ${negate ? "<>" : "="} ${list}`;
  return `${column} ${negate ? "NOT IN" : "IN"} (${list})`;
}
