import { SvcError } from "../errors.ts";

export const LEDGER_KINDS = ["token", "datetime", "child", "batch", "step", "session"] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];

/** Epoch used for entries keyed by a user's idempotency key: they outlive retried attempts. */
export const KEYED_EPOCH = -1;

/** One durable step of a run as recorded in `run_ledger`. */
export interface LedgerEntry {
  stepKey: string;
  epoch: number;
  kind: LedgerKind;
  /** What the code asked for: a token id, a wait spec, a child task id, a step name. */
  target: string | null;
  waitpointId: string | null;
  resolved: boolean;
  /** A wait's `{ ok, output?, outputType?, error? }` or a step's `{ ok, value?, error? }`. */
  outcome: unknown;
  expiresAt: Date | null;
  /**
   * Keyed entries: the attempt epoch that last recorded the entry or passed it by its key. Within
   * that epoch the entry is replayed whatever its TTL (see LedgerSession.lookup).
   */
  usedEpoch?: number | null;
  /**
   * When the entry was resolved, as loaded (a wait: its waitpoint's completion time). Left as the
   * database sent it (JSON text): only the resume-latency metric reads it.
   */
  resolvedAt?: Date | string | null;
}

/**
 * The code asked the ledger, at a recorded step key, for a different kind of step or target than
 * the one recorded: the task's code changed between executions or is not deterministic.
 */
export class NondeterminismError extends SvcError {
  override readonly code = "nondeterminism";
  constructor(
    readonly stepKey: string,
    readonly recorded: { kind: string; target: string | null },
    readonly requested: { kind: string; target: string | null },
  ) {
    super(
      `Nondeterministic replay at step ${stepKey}: the ledger recorded ${describe(recorded)} but the code asked for ${describe(requested)}. ` +
        `Waits and steps must be called in the same order on every execution.`,
    );
  }
}

function describe(step: { kind: string; target: string | null }): string {
  return step.target ? `${step.kind} "${step.target}"` : step.kind;
}
