import { z } from "zod";
import { LEDGER_KINDS } from "../ledger/entries.ts";
import { RUN_STATUSES } from "../engine/runs/statuses.ts";

/** One entry of a run's ledger as GET /api/v1/runs/{id}/ledger answers it (ledger/entries.ts LedgerEntry). */
export const RunLedgerEntry = z.object({
  /** `#n` by call order, `key:<k>` for a call with an idempotency key, `hook:<name>` for a lifecycle hook. */
  stepKey: z.string(),
  /** The attempt epoch it belongs to; -1 for keyed entries, which every attempt sees. */
  epoch: z.number().int(),
  kind: z.enum(LEDGER_KINDS),
  /** What the code asked for: a step's name, a token id, a child task id; null for a sleep. */
  target: z.string().nullable(),
  waitpointId: z.string().nullable(),
  /** False: a wait still pending (the code has not been given its result). */
  resolved: z.boolean(),
  /** A step's `{ ok, value }` (value: superjson text) or a wait's `{ ok, output?, outputType?, error? }`; null while pending. */
  outcome: z.unknown(),
  expiresAt: z.string().nullable(),
  usedEpoch: z.number().int().nullable(),
});
export type RunLedgerEntry = z.infer<typeof RunLedgerEntry>;

/**
 * GET /api/v1/runs/{id}/ledger (svc only): what a replay of the run's current attempt would read,
 * the entries of its ledger epoch and its keyed ones, in the order they were recorded.
 */
export const RunLedgerResponse = z.object({
  runId: z.string(),
  taskIdentifier: z.string(),
  status: z.enum(RUN_STATUSES),
  attemptNumber: z.number().int(),
  /** The epoch of the run's current (or last) attempt. */
  epoch: z.number().int(),
  entries: z.array(RunLedgerEntry),
});
export type RunLedgerResponse = z.infer<typeof RunLedgerResponse>;
