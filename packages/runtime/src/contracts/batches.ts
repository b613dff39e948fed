import { z } from "zod";
import { IdempotencyKey, storedText } from "./text.ts";
import { payloadTypeAlternatives, TriggerOptions } from "./trigger.ts";

/** Most runs one streamed (v3) batch may hold. */
export const MAX_STREAMED_BATCH_RUNS = 1000;
/** Most items one single-call (v2) batch may hold. */
export const MAX_BATCH_V2_ITEMS = 500;

/** POST /api/v3/batches: phase 1 of the SDK's two-phase batch trigger. */
export const CreateBatchBody = z.object({
  runCount: z.number().int().min(1).max(MAX_STREAMED_BATCH_RUNS),
  taskIdentifiers: z.array(storedText(z.string().min(1).max(128))).optional(),
  idempotencyKey: IdempotencyKey.optional(),
  idempotencyKeyOptions: z.object({ key: storedText(), scope: z.string().optional() }).passthrough().optional(),
  parentRunId: storedText(z.string().min(1)).optional(),
  resumeParentOnCompletion: z.boolean().optional(),
});
export type CreateBatchBody = z.infer<typeof CreateBatchBody>;

export const CreateBatchResponse = z.object({
  id: z.string(),
  runCount: z.number(),
  isCached: z.boolean(),
  idempotencyKey: z.string().optional(),
});

/** One NDJSON line of POST /api/v3/batches/{id}/items. */
export const BatchItem = z
  .object({
    // The document's bound is the largest batch; a batch's own runCount is checked with it.
    index: z.number().int().min(0).meta({ maximum: MAX_STREAMED_BATCH_RUNS - 1 }),
    task: storedText(z.string().min(1).max(128)),
    payload: z.unknown().optional(),
    options: TriggerOptions.optional(),
  })
  .meta({ anyOf: payloadTypeAlternatives("options") });
export type BatchItem = z.infer<typeof BatchItem>;

export const BatchItemsResponse = z.object({
  id: z.string(),
  itemsAccepted: z.number(),
  itemsDeduplicated: z.number(),
  sealed: z.boolean(),
  enqueuedCount: z.number(),
  expectedCount: z.number(),
});

/** POST /api/v2/tasks/batch: every item in one call. */
export const BatchTriggerV2Body = z.object({
  items: z
    .array(
      z
        .object({
          task: storedText(z.string().min(1).max(128)),
          payload: z.unknown().optional(),
          context: z.unknown().optional(),
          options: TriggerOptions.optional(),
        })
        .meta({ anyOf: payloadTypeAlternatives("options") }),
    )
    .min(1, "items: a batch needs at least one item")
    .max(MAX_BATCH_V2_ITEMS, `items: a batch can hold at most ${MAX_BATCH_V2_ITEMS} items`),
  parentRunId: storedText(z.string().min(1)).optional(),
  resumeParentOnCompletion: z.boolean().optional(),
});
export type BatchTriggerV2Body = z.infer<typeof BatchTriggerV2Body>;

export const BatchTriggerV2Response = z.object({ id: z.string(), runCount: z.number(), runs: z.array(z.string()) });

export const BatchIdParams = z.object({ batchId: storedText(z.string().min(1).max(256)) });

export const RetrieveBatchResponse = z.object({
  id: z.string(),
  status: z.enum(["PENDING", "COMPLETED"]),
  runCount: z.number(),
  runs: z.array(z.string()),
  idempotencyKey: z.string().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
  processing: z.object({
    completedAt: z.string().optional().meta({ description: "When every item had its run (the batch was sealed)" }),
    errors: z.array(z.object({ index: z.number(), taskIdentifier: z.string(), error: z.string(), errorCode: z.string().optional() })).meta({
      description: "Always empty: an item that cannot become a run is refused with the request that sent it",
    }),
  }),
});
