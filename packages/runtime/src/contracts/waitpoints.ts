import { z } from "zod";
import { WAITPOINT_STATUSES } from "../engine/waitpoints/statuses.ts";
import { IdempotencyKey, storedText } from "./text.ts";
import { commaListPattern, DurationOrDateText, DurationText, EPOCH_MS_SCHEMA, INSTANT_QUERY_SCHEMA } from "./time.ts";

/** A waitpoint id as the API hands it out: `waitpoint_` + an opaque suffix. */
export const WaitpointId = z
  .string()
  .max(128)
  .regex(/^waitpoint_[A-Za-z0-9_-]+$/, 'must be a waitpoint id such as "waitpoint_abc123"');

/** Body of POST /api/v1/waitpoints/tokens (Trigger.dev's CreateWaitpointTokenRequestBody). */
export const CreateWaitpointTokenRequestBody = z.object({
  /** Reusing a key (within its TTL) returns the existing token with `isCached: true`. */
  idempotencyKey: IdempotencyKey.optional(),
  /** Lifetime of the idempotency key, a duration such as "1h". Default "1h". */
  idempotencyKeyTTL: DurationText.optional(),
  /** A duration ("10m", "1h30m"), an ISO 8601 date, or epoch milliseconds. Default "10m". */
  timeout: z.union([DurationOrDateText, z.number().meta(EPOCH_MS_SCHEMA)]).optional(),
  tags: z.union([storedText(), z.array(storedText())]).optional(),
});
export type CreateWaitpointTokenRequestBody = z.infer<typeof CreateWaitpointTokenRequestBody>;

export const CreateWaitpointTokenResponse = z.object({
  id: z.string(),
  isCached: z.boolean(),
  /** POST to it (no auth header) to complete the token; its JSON body becomes the output. */
  url: z.string(),
  /** A JWT with scope `write:waitpoints:<id>`, valid 24 h; completes this token only. */
  publicAccessToken: z.string(),
});

/**
 * Body of POST /api/v1/waitpoints/tokens/{id}/complete. Our spec sends `{ output }`; the published
 * SDK sends `{ data }`. Both are accepted; `output` wins when both are present.
 */
export const CompleteWaitpointTokenRequestBody = z.object({
  output: z.unknown().optional(),
  data: z.unknown().optional(),
});
export type CompleteWaitpointTokenRequestBody = z.infer<typeof CompleteWaitpointTokenRequestBody>;

export const CompleteWaitpointTokenResponse = z.object({ success: z.literal(true) });

export const WaitpointTokenStatus = z.enum(["WAITING", "COMPLETED", "TIMED_OUT"]);

/** A list item (GET /api/v1/waitpoints/tokens): never carries output or error. */
export const WaitpointTokenItem = z.object({
  id: z.string(),
  url: z.string(),
  status: WaitpointTokenStatus,
  completedAt: z.string().optional(),
  timeoutAt: z.string().optional(),
  /** Only when the creator gave one; still shown after it expired. */
  idempotencyKey: z.string().optional(),
  idempotencyKeyExpiresAt: z.string().optional(),
  tags: z.array(z.string()),
  createdAt: z.string(),
});
export type WaitpointTokenItem = z.infer<typeof WaitpointTokenItem>;

/** GET /api/v1/waitpoints/tokens/{id}: the item plus the serialized output. */
export const WaitpointTokenDetail = WaitpointTokenItem.extend({
  /** JSON text (parse it by `outputType`); for a timed-out token the error `{ message, code, name }`. */
  output: z.string().optional(),
  outputType: z.string().optional(),
  outputIsError: z.boolean(),
});
export type WaitpointTokenDetail = z.infer<typeof WaitpointTokenDetail>;

/** Filters of GET /api/v1/waitpoints/tokens, as the SDK sends them (comma lists, epoch ms). */
export const ListWaitpointTokensFilterQuery = z.object({
  "filter[status]": z.string().meta({ pattern: commaListPattern(WAITPOINT_STATUSES), description: `Comma-separated statuses: ${WAITPOINT_STATUSES.join(", ")}` }).optional(),
  "filter[idempotencyKey]": storedText(z.string().min(1).max(2048)).optional(),
  "filter[tags]": storedText().optional(),
  "filter[createdAt][period]": z.string().meta({ enum: ["1h", "1d", "7d", "30d"] }).optional(),
  "filter[createdAt][from]": z.string().meta(INSTANT_QUERY_SCHEMA).optional(),
  "filter[createdAt][to]": z.string().meta(INSTANT_QUERY_SCHEMA).optional(),
});
export type ListWaitpointTokensFilterQuery = z.infer<typeof ListWaitpointTokensFilterQuery>;

export const ListWaitpointTokensResponse = z.object({
  data: z.array(WaitpointTokenItem),
  pagination: z.object({ next: z.string().optional(), previous: z.string().optional() }),
});
