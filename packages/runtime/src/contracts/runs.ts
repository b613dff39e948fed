import { z } from "zod";
import { IdempotencyKey, NUL_FREE, storedText } from "./text.ts";
import { LEGACY_RUN_STATUSES, RUN_STATUSES } from "../engine/runs/statuses.ts";
import { commaListPattern, DurationOrDateText, DurationText, EPOCH_MS_SCHEMA, INSTANT_QUERY_SCHEMA, MAX_DURATION_WHOLE_SECONDS } from "./time.ts";
import { MAX_DURATION_SECONDS, payloadTypeAlternatives } from "./trigger.ts";

/** What parseDuration reads, its first part not zero (so the period is never zero). */
export const RUN_LIST_PERIOD_PATTERN = "^[0-9]*[1-9][0-9]*(ms|s|m|hr|h|d|w)([0-9]+(ms|s|m|hr|h|d|w))*$";

/**
 * `a,b` or repeated `?k=a&k=b` → ["a", "b"] (the SDK joins arrays with commas). `meta` (a pattern)
 * is what the document shows for each value.
 */
function commaList(meta: Record<string, unknown> = {}) {
  return z
    .union([z.string().refine(...NUL_FREE).meta(meta), z.array(z.string().refine(...NUL_FREE).meta(meta))])
    .transform((value) =>
      (Array.isArray(value) ? value.join(",") : value)
        .split(",")
        .map((part) => part.trim())
        .filter((part) => part.length > 0),
    );
}
const CommaList = commaList();

/** `filter[status]` of run lists: statuses of either vocabulary (resolveRunListFilters). */
const RUN_STATUS_LIST_SCHEMA = {
  pattern: commaListPattern([...RUN_STATUSES, ...Object.keys(LEGACY_RUN_STATUSES)]),
  description: `Comma-separated run statuses: ${RUN_STATUSES.join(", ")}, or a legacy name (${Object.keys(LEGACY_RUN_STATUSES).join(", ")})`,
};

/** The `filter[...]` query of GET /api/v1/runs (Trigger.dev's names; unknown filters are ignored). */
export const RunListFilterQuery = z.object({
  "filter[status]": commaList(RUN_STATUS_LIST_SCHEMA).optional(),
  "filter[taskIdentifier]": CommaList.optional(),
  "filter[version]": CommaList.optional(),
  "filter[tag]": CommaList.optional(),
  "filter[batch]": CommaList.optional(),
  "filter[schedule]": CommaList.optional(),
  "filter[queue]": CommaList.optional(),
  "filter[isTest]": z.enum(["true", "false"]).optional(),
  /** Runs these sessions started (`session_…` ids or externalIds); no default time window then. */
  "filter[session]": CommaList.optional(),
  /** Runs these bulk actions touched (`bulk_…` ids): a cancel's runs, a replay's new runs; no default time window then. */
  "filter[bulkAction]": commaList({ pattern: "^bulk_[0-9a-z]{1,64}$" }).optional(),
  /** A duration such as 1h, 90m, 1d or 2w (ms, s, m, h, hr, d, w; more than zero). */
  "filter[createdAt][period]": z
    .string()
    .min(1)
    .refine(...NUL_FREE)
    .meta({ pattern: RUN_LIST_PERIOD_PATTERN, description: "A duration such as 1h, 90m, 1d or 2w (units ms, s, m, h, hr, d, w), more than zero" })
    .optional(),
  "filter[createdAt][from]": z.string().min(1).refine(...NUL_FREE).meta(INSTANT_QUERY_SCHEMA).optional(),
  "filter[createdAt][to]": z.string().min(1).refine(...NUL_FREE).meta(INSTANT_QUERY_SCHEMA).optional(),
});
export type RunListFilterQuery = z.infer<typeof RunListFilterQuery>;

export const RunIdParams = z.object({ runId: z.string().min(1).max(256).refine(...NUL_FREE) });

/** Cancel answers the canceled run's id; replay answers the new run's id. */
export const RunIdResponse = z.object({ id: z.string() });

/**
 * Optional body of POST /api/v1/runs/{id}/replay (SDK ≥ 4.8): overrides for the new run. Without
 * it the replay copies the original run. `machine`, `version`, `region` and `priority` are accepted
 * and ignored.
 */
export const ReplayRunBody = z.strictObject({
  payload: z.unknown().optional(),
  payloadType: z.enum(["application/json", "application/super+json"]).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  tags: z.union([storedText(), z.array(storedText())]).optional(),
  queue: storedText(z.string().min(1).max(128)).optional(),
  concurrencyKey: z.union([storedText(z.string().max(512)), z.number()]).optional(),
  machine: z.string().optional(),
  version: z.string().optional(),
  region: z.string().optional(),
  // A duration or date as text, or epoch milliseconds (never null or a boolean, which a coerced date would take as 1970).
  delay: z.union([DurationOrDateText, z.number().meta(EPOCH_MS_SCHEMA).transform((ms) => new Date(ms))]).optional(),
  ttl: z.union([DurationText, z.number().int().nonnegative().meta({ maximum: MAX_DURATION_WHOLE_SECONDS })]).optional(),
  idempotencyKey: IdempotencyKey.optional(),
  idempotencyKeyTTL: DurationText.optional(),
  maxAttempts: z.number().int().min(1).max(100).optional(),
  maxDuration: z.number().int().min(1).max(MAX_DURATION_SECONDS).optional(),
  priority: z.number().optional(),
  /**
   * svc's extension (Trigger.dev's SDK never sends it): where the new run starts. "start" (the
   * default) runs the task from the top; "failure" resumes a FAILED, CRASHED, SYSTEM_FAILURE or
   * TIMED_OUT run from where it failed: the new run replays the failed attempt's recorded steps,
   * completed waits and child results instead of doing them again (docs/replay-from-failure.md).
   */
  from: z.enum(["start", "failure"]).optional().meta({ description: "svc extension: \"failure\" resumes a FAILED, CRASHED, SYSTEM_FAILURE or TIMED_OUT run from its failure, replaying the failed attempt's recorded steps, completed waits and child results (docs/replay-from-failure.md); \"start\" (default) runs the task from the top. With \"failure\", a \"payload\" is refused (400): the recorded steps were computed from the original payload" }),
}).meta({ anyOf: payloadTypeAlternatives("", ["application/json", "application/super+json"]) });
export type ReplayRunBody = z.infer<typeof ReplayRunBody>;

/** A delay as text (a duration, or a date-time), or epoch milliseconds (never null or a boolean, which a coerced date would take as 1970). */
const Delay = z.union([DurationOrDateText, z.number().meta(EPOCH_MS_SCHEMA).transform((ms) => new Date(ms))]);

/** POST /api/v1/runs/{id}/reschedule: a DELAYED run's new delay, from now or as a date (in the future). */
export const RescheduleRunBody = z.object({ delay: Delay });
export type RescheduleRunBody = z.infer<typeof RescheduleRunBody>;

/**
 * POST /api/v1/runs/{id}/tags: one tag or several (each at most 128 characters, checked with the
 * trigger's message); blank ones and those the run has are skipped.
 */
export const AddRunTagsBody = z.object({ tags: z.union([storedText(), z.array(storedText())]) });
export type AddRunTagsBody = z.infer<typeof AddRunTagsBody>;

export const AddRunTagsResponse = z.object({ message: z.string() });

export const RunPacketParams = RunIdParams.extend({ field: z.enum(["payload", "output"]) });

/** A URL that serves the packet's bytes without credentials, for an hour. */
export const PresignedUrlResponse = z.object({ presignedUrl: z.string() });

/** POST /api/v1/idempotencyKeys/{key}/reset: `{key}` is the key as the SDK sends it (idempotencyKeys.create hashes the user's). */
export const ResetIdempotencyKeyParams = z.object({ key: IdempotencyKey });
export const ResetIdempotencyKeyBody = z.object({ taskIdentifier: storedText(z.string().min(1, "Task identifier is required").max(128)) });
export type ResetIdempotencyKeyBody = z.infer<typeof ResetIdempotencyKeyBody>;
export const ResetIdempotencyKeyResponse = z.object({ id: z.string() });
