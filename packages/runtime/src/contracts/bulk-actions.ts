import { z } from "zod";
import { LEGACY_RUN_STATUSES, RUN_STATUSES } from "../engine/runs/statuses.ts";
import { RUN_LIST_PERIOD_PATTERN } from "./runs.ts";
import { storedText } from "./text.ts";
import { DATE_TIME_SCHEMA, EPOCH_MS_SCHEMA } from "./time.ts";

/** Most run ids one bulk action may name (a filter has no such limit). */
export const MAX_BULK_ACTION_RUN_IDS = 10_000;

const Text = storedText(z.string().min(1).max(256));
const TextOrList = z.union([Text, z.array(Text).min(1).max(200)]);
const Status = z.enum([...RUN_STATUSES, ...(Object.keys(LEGACY_RUN_STATUSES) as [string, ...string[]])]);
const Instant = z.union([
  z.string().min(1).max(64).refine((v) => !v.includes("\u0000"), { message: "must not contain NUL characters" }).meta({ ...DATE_TIME_SCHEMA, description: "An RFC 3339 date-time (a Date, as the SDK sends it)" }),
  z.number().int().min(0).max(EPOCH_MS_SCHEMA.maximum).meta({ description: "Epoch milliseconds" }),
]);
const QueueTypeName = z.strictObject({
  type: z.enum(["task", "custom"]).meta({ description: "`task`: the task's own queue (its name is the task id); `custom`: a queue by its name" }),
  name: Text,
});

const FILTER_FIELDS = ["status", "taskIdentifier", "version", "tag", "from", "to", "period", "schedule", "batch", "isTest", "queue", "bulkAction"] as const;

/**
 * The runs a bulk action handles, by the filters of `runs.list()` (Trigger.dev's
 * BulkActionFilter, sent as JSON): they combine with AND, and at least one must be given. Without
 * `period` or `from`/`to`, the last 7 days, as the run list (from any time with `bulkAction`).
 * `machine` and `region` are refused (400): svc does not record them, and a bulk action must not
 * widen silently.
 */
export const BulkActionFilter = z
  .strictObject({
    status: z.union([Status, z.array(Status).min(1).max(50)]).meta({ description: "A run status or several (either vocabulary, as the run list's filter[status])" }).optional(),
    taskIdentifier: TextOrList.optional(),
    version: TextOrList.optional(),
    tag: TextOrList.meta({ description: "Runs with any of these tags" }).optional(),
    from: Instant.optional(),
    to: Instant.optional(),
    period: z.string().min(1).max(32).meta({ pattern: RUN_LIST_PERIOD_PATTERN, description: "A duration back from now such as 1h, 1d or 30d (instead of from)" }).optional(),
    schedule: Text.optional(),
    batch: Text.optional(),
    isTest: z.boolean().optional(),
    queue: z.union([QueueTypeName, z.array(QueueTypeName).min(1).max(200)]).optional(),
    bulkAction: z
      .string()
      .regex(/^bulk_[0-9a-z]{1,64}$/, { message: "must be a bulk action id (bulk_ and lowercase letters and digits)" })
      .meta({ description: "The runs an earlier bulk action touched (its id): a cancel's runs, a replay's new runs" })
      .optional(),
  })
  // At least one of them (the handler says so in words).
  .meta({ anyOf: FILTER_FIELDS.map((field) => ({ required: [field] })) });
export type BulkActionFilter = z.infer<typeof BulkActionFilter>;

const Action = z.enum(["cancel", "replay"]);
const RunIds = z.array(Text).min(1).max(MAX_BULK_ACTION_RUN_IDS);
const Name = storedText(z.string().max(255));
const TargetRegion = z.string().max(256).meta({ description: "Accepted and ignored: svc has no regions" });

/**
 * POST /api/v1/bulk-actions (the SDK's runs.bulk.cancel / runs.bulk.replay), as parsed: the
 * handler requires exactly one of `filter` and `runIds` (CreateBulkActionDocument says so).
 */
export const CreateBulkActionBody = z.strictObject({
  action: Action,
  filter: BulkActionFilter.optional(),
  runIds: RunIds.optional(),
  name: Name.optional(),
  targetRegion: TargetRegion.optional(),
});
export type CreateBulkActionBody = z.infer<typeof CreateBulkActionBody>;

/** The same body as the document shows it: a filter, or run ids, never both. */
export const CreateBulkActionDocument = z.union([
  z.strictObject({ action: Action, filter: BulkActionFilter, name: Name.optional(), targetRegion: TargetRegion.optional() }),
  z.strictObject({ action: Action, runIds: RunIds, name: Name.optional(), targetRegion: TargetRegion.optional() }),
]);

export const BulkActionIdResponse = z.object({ id: z.string() });

export const BulkActionIdParams = z.object({ bulkActionId: z.string().min(1).max(256).refine((v) => !v.includes("\u0000"), { message: "must not contain NUL characters" }) });

/** Trigger.dev's BulkActionObject. */
export const BulkActionObject = z.object({
  id: z.string(),
  name: z.string().optional(),
  type: z.enum(["CANCEL", "REPLAY"]),
  status: z.enum(["PENDING", "COMPLETED", "ABORTED"]),
  counts: z.object({
    total: z.number().meta({ description: "Runs of the set when the action was created" }),
    success: z.number().meta({ description: "Runs canceled, or replayed" }),
    failure: z.number().meta({ description: "Runs that could not be: already finished (a cancel), an error, an id of no run" }),
  }),
  createdAt: z.string().meta({ format: "date-time" }),
  completedAt: z.string().meta({ format: "date-time" }).optional(),
});
export type BulkActionObject = z.infer<typeof BulkActionObject>;

export const BulkActionListResponse = z.object({
  data: z.array(BulkActionObject),
  pagination: z.object({ next: z.string().optional(), previous: z.string().optional() }),
});
