import { z } from "zod";
import { SvcError } from "../errors.ts";
import { LEDGER_KINDS } from "./entries.ts";

/**
 * Data read back from the database or a NOTIFY (a ledger outcome, an offer) did not have the shape
 * svc writes: a bug or a foreign write, never the user's input. Names what was read and how it
 * differed.
 */
export class StoredDataError extends SvcError {
  override readonly code = "stored_data";
  constructor(what: string, error: z.ZodError) {
    super(`${what} does not have the shape svc stores: ${error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`);
    this.name = "StoredDataError";
  }
}

/** Validates `value` read from the database or a NOTIFY; throws StoredDataError naming `what`. */
export function parseStored<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new StoredDataError(what, result.error);
  return result.data;
}

/**
 * An error as a wait outcome carries it (a failed child run, a timed-out waitpoint). Fields beyond
 * these pass through to task code as they were stored.
 */
export const OutcomeErrorSchema = z.looseObject({ name: z.string().optional(), message: z.string().optional(), code: z.string().optional() });

/** What completeWaitpoint records for a wait (token, datetime, child run, batch). */
export const WaitOutcomeSchema = z.object({
  ok: z.boolean(),
  output: z.string().nullish(),
  outputType: z.string().nullish(),
  error: OutcomeErrorSchema.optional(),
  runId: z.string().optional(),
  /** A channel wait: how many `.out` records the run had appended to the session when it waited. */
  outAppended: z.number().int().nonnegative().optional(),
});

/** A memoised step's outcome (runStep, wait.createToken): its value as superjson text. */
export const StepOutcomeSchema = z.object({ value: z.string() });

/** One item of a batch wait's output (completeBatchIfDone). */
export const BatchItemOutcomeSchema = WaitOutcomeSchema.extend({ id: z.string(), taskIdentifier: z.string() });

/** A `run_ledger` row as JSON (an offer NOTIFY carries the run's ledger this way). */
export const LedgerRowSchema = z.object({
  step_key: z.string(),
  epoch: z.number().int(),
  kind: z.enum(LEDGER_KINDS),
  target: z.string().nullable(),
  waitpoint_id: z.string().nullable(),
  resolved: z.boolean(),
  outcome: z.unknown(),
  expires_at: z.string().nullable(),
  used_epoch: z.number().int().nullish(),
  resolved_at: z.string().nullish(),
});

/**
 * A run's stored `error` as other runs see it (a parent waiting on it): errors svc writes have a
 * name and a message (SerializedError, the crash errors); anything else reads as no detail.
 */
export const StoredRunErrorSchema = z.looseObject({ name: z.string().optional(), message: z.string().optional() });
