// The run object: the JSON shape of a run in GET /api/v3/runs/{id}, run lists and related runs.
// The one definition the API presenter is typed by, the OpenAPI document is built from and the
// client validates responses with. Optional fields are omitted, never null: the published SDK's
// zod schemas reject null there.
import { z } from "zod";
import { RUN_STATUSES } from "../engine/runs/statuses.ts";
import { SessionChannel } from "./sessions.ts";

/**
 * A date-time: the server sends `Date#toISOString()`, the client revives it as a Date, so what is
 * checked is that it parses as one (zod's iso.datetime would add a long regex to the OpenAPI document).
 */
const DateTime = z
  .string()
  .refine((text) => !Number.isNaN(Date.parse(text)), "Invalid date-time")
  .meta({ format: "date-time" });

/** Fields every run object has (list items, related runs and retrieve). */
export const RunObject = z.object({
  id: z.string(),
  status: z.enum(RUN_STATUSES),
  taskIdentifier: z.string(),
  /** The idempotency key as the caller gave it. */
  idempotencyKey: z.string().optional(),
  version: z.string().optional(),
  isQueued: z.boolean(),
  isExecuting: z.boolean(),
  isWaiting: z.boolean(),
  isCompleted: z.boolean(),
  isSuccess: z.boolean(),
  isFailed: z.boolean(),
  isCancelled: z.boolean(),
  isTest: z.boolean(),
  createdAt: DateTime,
  updatedAt: DateTime,
  startedAt: DateTime.optional(),
  finishedAt: DateTime.optional(),
  delayedUntil: DateTime.optional(),
  expiredAt: DateTime.optional(),
  ttl: z.string().optional(),
  tags: z.array(z.string()),
  costInCents: z.number(),
  baseCostInCents: z.number(),
  durationMs: z.number(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type RunObject = z.output<typeof RunObject>;

/** The ISO date-time fields of a run object (the client turns them into Dates). */
export const RUN_DATE_FIELDS = ["createdAt", "updatedAt", "startedAt", "finishedAt", "delayedUntil", "expiredAt"] as const;

const WaitpointId = z.string().meta({ description: "The waitpoint's id (`waitpoint_…`)" });

/**
 * A waitpoint a WAITING run waits on, by its type, with what ends the wait: a MANUAL token is
 * completed with POST /api/v1/waitpoints/tokens/{id}/complete; a DATETIME wait ends at `resumeAt`;
 * a RUN wait when the child run `runId` ends; a BATCH wait when the batch's last run ends; a
 * SESSION wait with the next record appended to the session's `channel`.
 */
export const RunWaitingFor = z
  .discriminatedUnion("type", [
    z.object({
      type: z.literal("MANUAL"),
      id: WaitpointId.meta({ description: "The token's id: complete it with POST /api/v1/waitpoints/tokens/{id}/complete" }),
      timeoutAt: DateTime.optional().meta({ description: "When the wait times out; absent: never" }),
    }),
    z.object({ type: z.literal("DATETIME"), id: WaitpointId, resumeAt: DateTime.meta({ description: "When the wait ends and the run resumes" }) }),
    z.object({ type: z.literal("RUN"), id: WaitpointId, runId: z.string().meta({ description: "The child run whose ending ends the wait" }) }),
    z.object({ type: z.literal("BATCH"), id: WaitpointId, batchId: z.string().meta({ description: "The batch whose last run's ending ends the wait" }) }),
    z.object({
      type: z.literal("SESSION"),
      id: WaitpointId,
      sessionId: z.string().meta({ description: "The session (`session_…`)" }),
      channel: SessionChannel.meta({ description: "The channel whose next record ends the wait" }),
      timeoutAt: DateTime.optional().meta({ description: "When the wait times out; absent: never" }),
    }),
  ])
  .meta({ id: "RunWaitingFor", description: "A waitpoint the run waits on, by type, with what ends the wait" });
export type RunWaitingFor = z.output<typeof RunWaitingFor>;

/** What a run waits on: the waitpoints of its pending waits, empty unless it is WAITING on one. */
const WaitingForList = z.array(RunWaitingFor).meta({
  description: "What the run waits on: empty unless it is WAITING on a pending waitpoint (a run whose wait has just ended is WAITING with nothing here until it resumes)",
});

/** A run in a list: the run object plus the environment it belongs to and what it waits on. */
export const RunListItem = RunObject.extend({ env: z.object({ id: z.string(), name: z.string() }), waitingFor: WaitingForList });
export type RunListItem = z.output<typeof RunListItem>;

export const RunListResponse = z.object({
  data: z.array(RunListItem),
  pagination: z.object({ next: z.string().optional(), previous: z.string().optional() }),
});
export type RunListResponse = z.output<typeof RunListResponse>;

/** A run as retrieve shows it and as a parent, root or child inside `relatedRuns`. */
export const RelatedRun = RunObject.extend({
  depth: z.number(),
  triggerFunction: z.string(),
  batchId: z.string().optional(),
});
export type RelatedRun = z.output<typeof RelatedRun>;

/** Trigger.dev's SerializedError. */
export const RunError = z.object({ message: z.string(), name: z.string().optional(), stackTrace: z.string().optional() });
export type RunError = z.output<typeof RunError>;

export const RunSchedule = z.object({
  id: z.string(),
  externalId: z.string().optional(),
  deduplicationKey: z.string().optional(),
  generator: z.object({ type: z.literal("CRON"), expression: z.string(), description: z.string() }),
});
export type RunSchedule = z.output<typeof RunSchedule>;

/** GET /api/v3/runs/{id}: the run with payload, output or error, schedule and relatives. */
export const RetrieveRunResponse = RelatedRun.extend({
  payload: z.unknown().optional(),
  payloadPresignedUrl: z.string().optional(),
  output: z.unknown().optional(),
  outputPresignedUrl: z.string().optional(),
  error: RunError.optional(),
  schedule: RunSchedule.optional(),
  relatedRuns: z.object({ root: RelatedRun.optional(), parent: RelatedRun.optional(), children: z.array(RelatedRun).optional() }),
  attemptCount: z.number(),
  attempts: z.array(z.unknown()),
  waitingFor: WaitingForList,
});
export type RetrieveRunResponse = z.output<typeof RetrieveRunResponse>;
