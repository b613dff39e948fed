import type { Clock } from "../clock.ts";
import type { RunLedgerResponse } from "../contracts/run-ledger.ts";
import { TaskLifecycle } from "../sdk/hooks/task-lifecycle.ts";
import { runInExecution } from "../sdk/run-context.ts";
import type { TaskContext } from "../sdk/task-context.ts";
import type { TaskLogSink } from "../sdk/task-logs.ts";
import type { Task } from "../sdk/task.ts";
import { NondeterminismError, type LedgerEntry } from "./entries.ts";
import { LocalExecution, type LocalReplayEvent, type LocalReplayStop } from "./local-execution.ts";
import { LedgerSession } from "./replay.ts";

export type { LocalReplayEvent, LocalReplayStop };

/** How a local replay ended: the code returned or threw, or it stopped at a call it cannot answer. */
export type LocalReplayEnd =
  | { kind: "returned"; output: unknown }
  | { kind: "threw"; error: unknown }
  | ({ kind: "stopped" } & LocalReplayStop);

/** A run's ledger as the API sends it (GET /api/v1/runs/{id}/ledger), as a replay reads it. */
export function ledgerEntriesOf(ledger: RunLedgerResponse): LedgerEntry[] {
  return ledger.entries.map((e) => ({
    stepKey: e.stepKey,
    epoch: e.epoch,
    kind: e.kind,
    target: e.target,
    waitpointId: e.waitpointId,
    resolved: e.resolved,
    outcome: e.outcome,
    expiresAt: e.expiresAt === null ? null : new Date(e.expiresAt),
    usedEpoch: e.usedEpoch,
  }));
}

/**
 * Runs `task` with `payload` in this process against a run's recorded ledger (LocalExecution):
 * recorded calls return their recorded results, the first unrecorded step runs here, and nothing
 * is written anywhere. With its lifecycle hooks as a worker runs it, except that a failure is never
 * retried. `onEvent` hears of each call as it happens (a debugger stepping through sees them live).
 */
export async function replayLocally(args: {
  task: Task;
  ledger: RunLedgerResponse;
  payload: unknown;
  ctx: TaskContext;
  clock: Clock;
  logs: TaskLogSink;
  onEvent?: (event: LocalReplayEvent) => void;
}): Promise<{ events: LocalReplayEvent[]; end: LocalReplayEnd }> {
  const events: LocalReplayEvent[] = [];
  const abort = new AbortController();
  const execution = new LocalExecution({
    ctx: args.ctx,
    ledger: new LedgerSession(args.ledger.epoch, ledgerEntriesOf(args.ledger)),
    clock: args.clock,
    logs: args.logs,
    signal: abort.signal,
    onEvent: (event) => {
      events.push(event);
      args.onEvent?.(event);
    },
  });
  const lifecycle = new TaskLifecycle({
    task: args.task,
    execution,
    payload: args.payload,
    signal: abort.signal,
    resumed: false,
    decide: () => null,
    isInternal: (error) => error instanceof NondeterminismError,
  });
  const end = await Promise.race([
    runInExecution(execution, () => Promise.resolve().then(() => lifecycle.run())).then(
      (outcome): LocalReplayEnd => (outcome.kind === "returned" ? { kind: "returned", output: outcome.output } : { kind: "threw", error: outcome.error }),
      (error: unknown): LocalReplayEnd => ({ kind: "threw", error }),
    ),
    execution.stopped.then((stop): LocalReplayEnd => ({ kind: "stopped", ...stop })),
  ]);
  if (end.kind === "stopped") {
    // The code is left awaiting forever; its signal tells it to stop, and cleanup runs.
    abort.abort(new Error(`local replay stopped: ${end.reason}`));
    await runInExecution(execution, () => lifecycle.stopped());
  }
  return { events, end };
}
