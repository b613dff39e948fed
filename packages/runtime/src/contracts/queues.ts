import { z } from "zod";
import { storedText } from "./text.ts";

/**
 * Queues on Trigger.dev's paths (/api/v1/queues…): list, retrieve, pause and resume, and the
 * concurrencyLimit override with its reset. `{value}` is a queue's `queue_…` id (`type` "id", the
 * default) or its name: a task's id (`type` "task": its own queue) or the name tasks give a queue
 * (`type` "custom"). The SDK sends a `/` in a name as `%2F`, encoded once more.
 */

export const QUEUE_PAGE_DEFAULT = 20;
export const QUEUE_PAGE_MAX = 100;

/** The largest concurrencyLimit an override may set (Trigger.dev's bound). */
export const MAX_QUEUE_CONCURRENCY_LIMIT = 100_000;

const QueueLookupType = z.enum(["id", "task", "custom"]);

export const QueueParams = z.object({ value: storedText(z.string().min(1, "must not be empty").max(256)) });

/** GET /api/v1/queues/{value}?type=… */
export const RetrieveQueueQuery = z.object({
  /** @default "id" */
  type: QueueLookupType.optional(),
});

/** POST /api/v1/queues/{value}/pause */
export const PauseQueueBody = z.object({
  /** @default "id" */
  type: QueueLookupType.optional(),
  action: z.enum(["pause", "resume"]),
});

/** POST /api/v1/queues/{value}/concurrency/override */
export const OverrideQueueConcurrencyBody = z.object({
  /** @default "id" */
  type: QueueLookupType.optional(),
  /** Replaces the declared limit until a reset; 0 starts nothing. */
  concurrencyLimit: z.number().int().min(0).max(MAX_QUEUE_CONCURRENCY_LIMIT),
});

/** POST /api/v1/queues/{value}/concurrency/reset */
export const ResetQueueConcurrencyBody = z.object({
  /** @default "id" */
  type: QueueLookupType.optional(),
});

/** Offset pages: `page` is 1-based; `perPage` defaults to 20 and is capped at 100. */
export const ListQueuesQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).optional(),
  perPage: z.coerce.number().int().min(1).max(1_000_000).optional(),
});

/** A queue as Trigger.dev's QueueItem (version V1: the queue carries its own limit). */
export const QueueObject = z.object({
  id: z.string(),
  /** A task's own queue is named by the task id (without svc's `task/` prefix). */
  name: z.string(),
  type: z.enum(["task", "custom"]),
  version: z.literal("V1"),
  /** EXECUTING runs. */
  running: z.number(),
  /** QUEUED runs whose start is due. */
  queued: z.number(),
  /** No new runs start while paused; runs under way go on. */
  paused: z.boolean(),
  /** The limit in force: the override, else the tasks' declared one; null: none. */
  concurrencyLimit: z.number().nullable(),
  concurrency: z.object({
    current: z.number().nullable(),
    /** The strictest concurrencyLimit the queue's tasks declare. */
    base: z.number().nullable(),
    override: z.number().nullable(),
    overriddenAt: z.string().nullable(),
    /** Null when overridden through the API. */
    overriddenBy: z.string().nullable(),
  }),
});
export type QueueObject = z.infer<typeof QueueObject>;

export const ListQueuesResponse = z.object({
  data: z.array(QueueObject),
  pagination: z.object({ currentPage: z.number(), totalPages: z.number(), count: z.number() }),
});
