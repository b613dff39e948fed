import { KEYED_EPOCH } from "../../ledger/entries.ts";
import { CHANNELS } from "../channels.ts";
import { CLAIMED_COLUMNS } from "../runs/claimed-columns.ts";

/**
 * How a completion offers the runs it wakes to workers: svc_complete_waitpoint takes these as its
 * `p_offers` parameter, so that they are defined here once (the worker reads the same values).
 */
export const RESUME_OFFERS = {
  /** A worker hears its offers on this prefix + its id. */
  channelPrefix: CHANNELS.offersPrefix,
  /** How long an offer waits to be accepted before the timer loop takes it back. */
  leaseSeconds: 5,
  /**
   * A completion that wakes more runs than this announces them to every worker instead (one
   * token many runs wait on: each worker claims as many as it has slots for in one statement).
   */
  maxRuns: 16,
  /** NOTIFY payloads must stay under 8,000 bytes: a larger offer carries only the claim token. */
  maxPayloadBytes: 7900,
  /** The ledger epoch of keyed waits, replayed by every attempt (an offer carries them too). */
  keyedEpoch: KEYED_EPOCH,
  /** The run's columns an offer carries: what a claim returns. */
  columns: CLAIMED_COLUMNS,
} as const;

/** RESUME_OFFERS as the function's jsonb parameter (one constant string: the prepared statement's value never changes). */
export const RESUME_OFFERS_PARAMETER = JSON.stringify(RESUME_OFFERS);
