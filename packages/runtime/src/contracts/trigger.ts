import { z } from "zod";
import { IdempotencyKey, storedText } from "./text.ts";

/** Largest maxDuration in seconds: the column is a Postgres integer (about 68 years). */
export const MAX_DURATION_SECONDS = 2_147_483_647;

const Tags = z.union([storedText(), z.array(storedText())]);

/** Options of POST /api/v1/tasks/{taskId}/trigger (Trigger.dev's TriggerTaskRequestBody). */
export const TriggerOptions = z
  .object({
    payloadType: z.string().optional(),
    payloadSize: z.number().int().nonnegative().optional(),
    queue: z.object({ name: storedText(z.string().min(1).max(128)) }).passthrough().optional(),
    concurrencyKey: z.union([storedText(z.string().max(512)), z.number()]).optional(),
    // A duration or date as text, or epoch milliseconds (never null or a boolean, which a coerced date would take as 1970).
    delay: z.union([z.string(), z.number().transform((ms) => new Date(ms))]).optional(),
    ttl: z.union([z.string(), z.number().int().nonnegative()]).optional(),
    idempotencyKey: IdempotencyKey.optional(),
    idempotencyKeyTTL: z.string().optional(),
    idempotencyKeyOptions: z.object({ key: storedText(), scope: z.string().optional() }).passthrough().optional(),
    tags: Tags.optional(),
    metadata: z.unknown().optional(),
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
  })
  .passthrough();
export type TriggerOptions = z.infer<typeof TriggerOptions>;

export const TriggerTaskRequestBody = z.object({
  payload: z.unknown().optional(),
  context: z.unknown().optional(),
  options: TriggerOptions.optional(),
});
export type TriggerTaskRequestBody = z.infer<typeof TriggerTaskRequestBody>;

export const TriggerTaskResponse = z.object({ id: z.string(), isCached: z.boolean() });
