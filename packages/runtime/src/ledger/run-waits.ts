import { retryWrite } from "../db/retry-write.ts";
import { retryWhileUnavailable } from "../db/unavailable.ts";
import { withTransaction, type Queryable } from "../db/queryable.ts";
import { parseTtl } from "../durations.ts";
import type { EngineDeps } from "../engine/deps.ts";
import type { RunTally } from "../engine/runs/run-tally.ts";
import type { Environment } from "../engine/tenancy/environments.ts";
import { never } from "../sdk/never.ts";
import { traceparentOf } from "../tracing/traceparent.ts";
import { inSpan, type ExecutionTracing } from "./execution-tracing.ts";
import { holdClaim, registerWait, type WaitRegistration, type WaitRequest } from "./ledger-store.ts";
import type { LedgerSession } from "./replay.ts";
import type { LedgerCopyTracker } from "./suspended-ledger.ts";
import { waitResult } from "./wait-results.ts";

const DEFAULT_WAIT_KEY_TTL = "1h";

/** What a run's waits use of their execution (DurableExecution's claim, ledger and fencing). */
export interface WaitingExecution {
  deps: EngineDeps;
  env: Environment;
  runId: string;
  claimToken: string;
  ledger: LedgerSession;
  /** Whether the ledger is still the stored one when the run suspends. */
  ledgerCopy: LedgerCopyTracker;
  /** Traces on: a wait is a span under the attempt's; null: no span. */
  tracing: ExecutionTracing | null;
  /** Hears of the child runs a wait triggered, once they are committed. */
  tally: RunTally;
  /** Settles when the execution suspends or loses its claim. */
  ended: Promise<unknown>;
  isFenced(): boolean;
  mayWrite(): Promise<boolean>;
  /** The execution lost its claim: it writes nothing more. */
  fence(): void;
  /** The wait at `key` suspended the run: the execution ends, suspended. */
  suspend(key: { stepKey: string; epoch: number }): void;
  /** Resolves once every `.out` record appended so far is stored. */
  flushChannels(): Promise<void>;
}

/**
 * How a run's code waits: each wait is recorded in the ledger on its waitpoint (the one already
 * recorded at this step, or one made in the same transaction), and either returns at once (the
 * waitpoint is already finished) or suspends the run, fencing the execution.
 */
export class RunWaits {
  constructor(private readonly execution: WaitingExecution) {}

  /**
   * Records a wait on a waitpoint (reusing the one already recorded at this step, or making one
   * with `makeWaitpoint` in the same transaction) and suspends unless it is already finished.
   */
  async register(wait: WaitRequest): Promise<any> {
    const { execution } = this;
    // Every `.out` record the code appended lands before the run can suspend.
    await execution.flushChannels();
    if (!(await execution.mayWrite())) return never();
    if (!execution.tracing) return this.#registerWait(wait);
    const attributes = { "svc.run.id": execution.runId, "svc.wait.kind": wait.kind, "svc.wait.target": wait.target, "svc.step.key": wait.key.stepKey };
    const registered = await inSpan(execution.tracing, `wait ${wait.kind}`, attributes, async (span) => {
      // Stored while the claim is ours, before the wait can suspend the run: its resume links to this span.
      const waitTraceparent = traceparentOf(span.spanContext());
      if (waitTraceparent) {
        await retryWrite(() => execution.deps.db.query(`UPDATE runs SET wait_traceparent = $3 WHERE id = $1 AND claim_token = $2`, [execution.runId, execution.claimToken, waitTraceparent]));
      }
      const result = await Promise.race([this.#registerWait(wait), execution.ended.then((end) => end)]);
      span.setAttribute("svc.wait.suspended", execution.isFenced());
      return { result, fenced: execution.isFenced() };
    });
    // A suspended (or fenced) execution's wait returns a promise that never settles; its span has
    // ended with the registration.
    return registered.fenced ? never() : registered.result;
  }

  #registerWait(wait: WaitRequest): Promise<any> {
    return this.execution.ledgerCopy.writing(() => this.#recordWait(wait));
  }

  async #recordWait({ key, kind, target, existingWaitpointId, options, makeWaitpoint }: WaitRequest): Promise<any> {
    const { deps, env, runId, claimToken, ledger } = this.execution;
    const now = deps.clock.now();
    const expiresAt = options?.idempotencyKey ? new Date(now.getTime() + parseTtl(options.idempotencyKeyTTL ?? DEFAULT_WAIT_KEY_TTL, "idempotencyKeyTTL")) : null;
    const register = (db: Queryable, waitpointId: string) =>
      registerWait(db, { runId, environmentId: env.id, claimToken, epoch: key.epoch, stepKey: key.stepKey, kind, target, waitpointId, expiresAt, now, attemptEpoch: ledger.epoch });
    // An existing waitpoint (a token, or a re-registered wait) needs one statement; a new one is
    // created in the same transaction as the wait on it, once the claim is known to be ours.
    let registration: WaitRegistration;
    let waitpointId: string;
    if (existingWaitpointId) {
      waitpointId = existingWaitpointId;
      registration = await retryWrite(() => register(deps.db, existingWaitpointId));
    } else {
      const made = await retryWhileUnavailable(() => withTransaction(deps.db, async (tx) => {
        if (!(await holdClaim(tx, runId, claimToken))) return { registration: { kind: "fenced" } as const, runsTriggered: 0, waitpointId: "" };
        const waitpoint = await makeWaitpoint(tx);
        return { registration: await register(tx, waitpoint.id), runsTriggered: waitpoint.runsTriggered ?? 0, waitpointId: waitpoint.id };
      }));
      // Committed: the child runs exist (a try that rolled back and was retried made none).
      if (made.runsTriggered > 0) this.execution.tally.triggered(made.runsTriggered, "child");
      registration = made.registration;
      waitpointId = made.waitpointId;
    }
    // Remembered as the statement recorded them (see REGISTER_WAIT_SQL), so that the ledger kept
    // by suspendedLedger is the stored one.
    const recorded = { stepKey: key.stepKey, epoch: key.epoch, kind, target, waitpointId, expiresAt, usedEpoch: ledger.epoch };
    switch (registration.kind) {
      case "resolved":
        ledger.remember({ ...recorded, resolved: true, outcome: registration.outcome, resolvedAt: now });
        return kind === "token" || kind === "datetime" ? waitResult(registration.outcome) : registration.outcome;
      case "suspended":
        ledger.remember({ ...recorded, resolved: false, outcome: null });
        this.execution.ledgerCopy.suspendedAt(registration.ledgerVersion, ledger.epoch, () => ledger.entries());
        this.execution.suspend(key);
        return never();
      case "fenced":
        this.execution.fence();
        return never();
      case "waitpoint_missing":
        throw new Error(`wait.forToken(): there is no token "${target}" in this environment`);
    }
  }
}
