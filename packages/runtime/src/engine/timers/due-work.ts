import type { Queryable } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";
import type { RunTally } from "../runs/run-tally.ts";

/**
 * Time-driven transitions, evaluated against an injected `now` (tests move a fake clock and call
 * these; the worker's timer loop calls them when the next one is due). Each claims due rows with
 * FOR UPDATE SKIP LOCKED, so any number of processes can run them and each event fires once.
 */
export interface DueWork {
  name: string;
  /**
   * Fires what is due at `now`; returns how many items it handled. Work that creates or ends runs
   * tells `tally` how many, once its transaction committed (the worker counts them in its metrics).
   * Long work (the retention sweep) stops between its transactions once `signal` is aborted (the
   * loop is stopping); what it left is due again for whoever runs next.
   */
  fire(deps: EngineDeps, now: Date, limit: number, tally?: RunTally, signal?: AbortSignal): Promise<number>;
  /**
   * The earliest time something will be due, or null. It must cover everything `fire` would
   * handle: the worker's timer loop fires a kind only once its nextDue has come.
   */
  nextDue(db: Queryable): Promise<Date | null>;
  /**
   * nextDue as one query (one row, its one column the time), when it is one (`dueAt` makes both):
   * the timer loop asks every such kind in one statement, so that a pass finding nothing due costs
   * one statement rather than a transaction per kind.
   */
  nextDueSql?: string;
}
