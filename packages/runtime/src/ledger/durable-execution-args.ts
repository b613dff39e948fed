import type { Queryable } from "../db/queryable.ts";
import type { EngineDeps } from "../engine/deps.ts";
import type { RunTally } from "../engine/runs/run-tally.ts";
import type { ClaimedRun } from "../engine/runs/claimed-columns.ts";
import type { ChannelArrivals } from "../engine/sessions/in-arrivals.ts";
import type { Environment } from "../engine/tenancy/environments.ts";
import type { ReplayNotices } from "../sdk/replay-notices.ts";
import type { CreatedToken, CreateTokenOptions } from "../sdk/run-context.ts";
import type { TaskContext } from "../sdk/task-context.ts";
import type { TaskLogSink } from "../sdk/task-logs.ts";
import type { ExecutionTracing } from "./execution-tracing.ts";
import type { LedgerSession } from "./replay.ts";

/**
 * Prepares a waitpoint token for task code (bound to the token service by the worker: tokenCreator):
 * resolves to the function that creates it inside a transaction.
 */
export type CreateToken = (env: Environment, options: CreateTokenOptions) => Promise<(tx: Queryable) => Promise<CreatedToken>>;

/** What one DurableExecution runs with: the claimed run, its ledger, and the worker's services. */
export interface DurableExecutionArgs {
    deps: EngineDeps;
    run: ClaimedRun;
    env: Environment;
    claimToken: string;
    ledger: LedgerSession;
    ctx: TaskContext;
    signal: AbortSignal;
    createToken: CreateToken;
    /** An offered run: whether its offer still stands (not canceled or taken over since). */
    offerStands?: (() => Promise<boolean>) | null;
    /** What wakes session.in.once; without it, once() throws. */
    arrivals?: ChannelArrivals;
    /** What wakes streams.input().once/on; without it, they throw. */
    inputArrivals?: ChannelArrivals;
    /** Traces on: spans of steps and waits under the attempt's span. */
    tracing?: ExecutionTracing | null;
    /** Told of the runs the code created here (the worker's svc_runs_triggered_total); default: nobody. */
    tally?: RunTally;
    /**
     * The run's ledger_version that `ledger` is the ledger at (the claim's, or the offer's): with
     * it, a suspension tells whether the ledger is still this execution's copy (suspendedLedger).
     */
    ledgerVersion?: number | null;
    /** Where `logger.*` writes (the worker's log); default: the console. */
    logs?: TaskLogSink;
    /** The worker's (said once per worker); default: this execution's own. */
    notices?: ReplayNotices;
}
