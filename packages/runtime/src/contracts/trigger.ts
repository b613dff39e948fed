import { z } from "zod";
import { CONCURRENCY_LIMIT_NAME } from "./concurrency-limits.ts";
import { IdempotencyKey, storedText } from "./text.ts";
import { DurationOrDateText, DurationText, EPOCH_MS_SCHEMA, MAX_DURATION_WHOLE_SECONDS } from "./time.ts";
import { MAX_RATE_PERIOD_MS } from "../durations.ts";
import { MAX_RATE_LIMIT } from "../sdk/rate-limit.ts";

/** How a trigger's `payload` is encoded (engine/runs/payloads.ts reads each). */
/**
 * A rate period as text, as the document shows it: durations from 1 ms to 7 days, largest unit
 * first, each unit once and none zero (so none sums to 0 ms), each bounded so that none passes 7
 * days: `1w` or `7d` alone, else up to 6d23h59m59s999ms. The engine also takes the spellings the
 * pattern leaves out ("0d1h", "168h", "1m1h"), as for any duration.
 */
const RATE_PERIOD_SCHEMA = {
  pattern: "^(1w|7d|([1-6]d)?(([1-9]|1[0-9]|2[0-3])(hr|h))?(([1-9]|[1-5][0-9])m)?(([1-9]|[1-5][0-9])s)?([1-9][0-9]{0,2}ms)?)$",
  minLength: 2,
};

export const PAYLOAD_TYPES = ["application/json", "application/super+json", "text/plain", "application/store"] as const;
export type PayloadType = (typeof PAYLOAD_TYPES)[number];

/**
 * What `payload` may be for each payloadType (encodePayload, engine/runs/payloads.ts), as the
 * document's alternatives of the object holding both; `at` is the property holding payloadType
 * ("options" in a trigger body, "" when beside payload). application/json (the default) takes any
 * value; application/super+json any value but a string (a string must be superjson text, which no
 * schema can say); text/plain a string; application/store the storagePath from PUT /api/v2/packets.
 */
export function payloadTypeAlternatives(at: "options" | "", types: readonly PayloadType[] = PAYLOAD_TYPES) {
  const payloads: Record<PayloadType, { payload?: Record<string, unknown>; required?: boolean }> = {
    "application/json": {},
    "application/super+json": { payload: { not: { type: "string" } } },
    "text/plain": { payload: { type: "string" }, required: true },
    "application/store": { payload: { type: "string", minLength: 1 }, required: true },
  };
  return types.map((type) => {
    const { payload, required } = payloads[type];
    // The default type also stands for no payloadType at all.
    const typed = type === "application/json" ? { properties: { payloadType: { const: type } } } : { properties: { payloadType: { const: type } }, required: ["payloadType"] };
    const holder = at === "" ? typed : { properties: { [at]: typed }, ...(type === "application/json" ? {} : { required: [at] }) };
    return {
      ...holder,
      properties: { ...holder.properties, ...(payload ? { payload } : {}) },
      required: [...((holder as { required?: string[] }).required ?? []), ...(required ? ["payload"] : [])],
    };
  });
}

/** Largest maxDuration in seconds: the column is a Postgres integer (about 68 years). */
export const MAX_DURATION_SECONDS = 2_147_483_647;

const Tags = z.union([storedText(), z.array(storedText())]);

/** What an idempotency key is unique to (idempotencyKeys.create): the run that triggers, its attempt, or nothing. */
export const IDEMPOTENCY_KEY_SCOPES = ["run", "attempt", "global"] as const;

/** Which trigger's payload and options a debounced run keeps: the first (leading, the default) or the last. */
export const DEBOUNCE_MODES = ["leading", "trailing"] as const;

/** At most this many gates a run has (Trigger.dev's TriggerTaskRequestBody: `gates` `.max(3)`). */
export const MAX_GATES = 3;

/** Options of POST /api/v1/tasks/{taskId}/trigger (Trigger.dev's TriggerTaskRequestBody). */
export const TriggerOptions = z
  .object({
    payloadType: z
      .string()
      .meta({
        enum: [...PAYLOAD_TYPES],
        description: "How `payload` is encoded: application/json (any value; the default), application/super+json (superjson text, or any value but a string), text/plain (a string), application/store (the storagePath of PUT /api/v2/packets)",
      })
      .optional(),
    payloadSize: z.number().int().nonnegative().optional(),
    queue: z.object({ name: storedText(z.string().min(1).max(128)) }).passthrough().optional(),
    concurrencyKey: z.union([storedText(z.string().max(512)), z.number()]).optional(),
    /**
     * Named concurrency limits the run holds while it executes, besides its queue's (at most two;
     * docs/queues-and-concurrency.md). Each caps the executing runs holding it across tasks and
     * queues, per concurrencyKey (`perKey`) and in all (`total`), as the concurrency-limits API sets them.
     */
    concurrency: z
      .array(z.string().regex(CONCURRENCY_LIMIT_NAME, "each name is 1-122 letters, digits, `_` or `-`"))
      .max(2, "a run holds at most 2 named concurrency limits")
      .optional(),
    /**
     * Other queues the run must also fit in while it executes (at most three;
     * docs/queues-and-concurrency.md#gates): each gate's pool is that queue's `concurrencyKey` (none:
     * its runs without a key), bounded by that queue's concurrencyLimit and counting its own
     * executing runs with the runs gated on it. A queue without a limit gates nothing.
     */
    gates: z
      .array(
        // Strict: a misspelt key would put the run in another pool than the one meant.
        z.strictObject({
          queue: storedText(z.string().min(1, "a gate's queue is 1 to 128 characters").max(128, "a gate's queue is 1 to 128 characters")),
          concurrencyKey: storedText(z.string().min(1, "a gate's concurrencyKey is 1 to 128 characters").max(128, "a gate's concurrencyKey is 1 to 128 characters")).optional(),
        }),
      )
      .max(MAX_GATES, `a run has at most ${MAX_GATES} gates`)
      .meta({ description: "Other queues the run must also fit in while it executes, each `{ queue, concurrencyKey? }` (at most 3): a gate's pool is that queue's concurrencyKey (none: its runs without a key), bounded by that queue's concurrencyLimit, counting its own executing runs and those gated on it. A queue without a limit (or unknown to svc) gates nothing; a paused one starts no run gated on it" })
      .optional(),
    /**
     * svc's extension: the run's rate key and its own bound (docs/rate-limits.md). Each key of a
     * rate-limited queue has its own copy of the task's or queue's `rateLimit`; runs without one
     * share one. `limit` with `period` bound this run too. planRun checks the values and refuses
     * other keys with its own messages.
     */
    rateLimit: z
      .object({
        key: z.union([storedText(z.string().min(1).max(512)), z.number()]).optional(),
        // Plain number and string here, the bounds in the document only: planRun answers for itself.
        limit: z
          .number()
          .meta({ type: "integer", minimum: 1, maximum: MAX_RATE_LIMIT, description: "with `period`: this run starts only while its key's starts in the last `period` number fewer than `limit`" })
          .optional(),
        period: z
          .union([z.string().meta(RATE_PERIOD_SCHEMA), z.number().meta({ type: "integer", minimum: 1, maximum: MAX_RATE_PERIOD_MS })])
          .meta({ description: 'a duration ("1s", "10m", "1h30m") or whole milliseconds, 1 ms to 7 days' })
          .optional(),
      })
      .passthrough()
      .meta({
        description:
          "svc extension: `{ key?, limit?, period? }`. `key` is the run's rate key: each key of a queue with a rateLimit (declared on the task or queue) has its own copy of the limit; runs without a key share one. `limit` and `period` (together) give the run its own bound besides its queue's: it starts only while its key's starts in the last `period` number fewer than `limit`",
        additionalProperties: false,
        dependentRequired: { limit: ["period"], period: ["limit"] },
      })
      .optional(),
    // A duration or date as text, or epoch milliseconds (never null or a boolean, which a coerced date would take as 1970).
    delay: z.union([DurationOrDateText, z.number().meta(EPOCH_MS_SCHEMA).transform((ms) => new Date(ms))]).optional(),
    ttl: z.union([DurationText, z.number().int().nonnegative().meta({ maximum: MAX_DURATION_WHOLE_SECONDS })]).optional(),
    idempotencyKey: IdempotencyKey.optional(),
    idempotencyKeyTTL: DurationText.optional(),
    /** The key as its user gave it and its scope (idempotencyKeys.create): shown on the run and in the task's context. */
    idempotencyKeyOptions: z.object({ key: storedText(), scope: z.enum(IDEMPOTENCY_KEY_SCOPES).optional() }).passthrough().optional(),
    tags: Tags.optional(),
    // An object (planRun refuses anything else with its own message).
    metadata: z.unknown().meta({ type: "object" }).optional(),
    metadataType: z.string().optional(),
    maxAttempts: z.number().int().min(1).max(100).optional(),
    maxDuration: z.number().int().min(1).max(MAX_DURATION_SECONDS).optional(),
    machine: z.string().optional(),
    priority: z.number().optional(),
    test: z.boolean().optional(),
    lockToVersion: z.string().optional(),
    parentRunId: storedText().optional(),
    resumeParentOnCompletion: z.boolean().optional(),
    parentBatch: z.string().optional(),
    /**
     * Debounced trigger (Trigger.dev ≥ 4.3): the first trigger with a key creates a run delayed by
     * `delay`; later ones with the key push it back while it has not started (engine/runs/debounce.ts).
     */
    debounce: z
      .object({
        key: storedText(z.string().min(1).max(512)),
        delay: DurationText.meta({ description: "How long after the last trigger the run starts; at least 1s (a shorter one is refused: 400)" }),
        mode: z.enum(DEBOUNCE_MODES).optional(),
        maxDelay: DurationText.optional(),
      })
      .passthrough()
      .optional(),
  })
  .passthrough();
export type TriggerOptions = z.infer<typeof TriggerOptions>;

export const TriggerTaskRequestBody = z
  .object({
    payload: z.unknown().optional(),
    context: z.unknown().optional(),
    options: TriggerOptions.optional(),
  })
  .meta({ anyOf: payloadTypeAlternatives("options") });
export type TriggerTaskRequestBody = z.infer<typeof TriggerTaskRequestBody>;

export const TriggerTaskResponse = z.object({ id: z.string(), isCached: z.boolean() });
