import { z } from "zod";

/**
 * Named concurrency limits on Trigger.dev's paths (/api/v1/concurrency-limits…): list, retrieve
 * (the limit, or one concurrencyKey's view of it), override its bounds or one key's, pause and
 * resume it, reset. A run holds a limit by naming it in its trigger's `concurrency` option.
 */

/** A limit's name, as Trigger.dev's TriggerConcurrencyLimitsSchema allows it. */
export const CONCURRENCY_LIMIT_NAME = /^[a-zA-Z0-9_-]{1,122}$/;

export const CONCURRENCY_LIMIT_PAGE_DEFAULT = 20;
export const CONCURRENCY_LIMIT_PAGE_MAX = 100;
/** The largest bound an override may set (Trigger.dev's). */
export const MAX_CONCURRENCY_BOUND = 100_000;
/** A key override's life when `ttl` is not given, and the longest it may be (seconds). */
export const KEY_OVERRIDE_TTL_DEFAULT_S = 7 * 86_400;
export const KEY_OVERRIDE_TTL_MAX_S = 30 * 86_400;

const LimitName = z.string().regex(CONCURRENCY_LIMIT_NAME, "must be 1-122 letters, digits, `_` or `-`");
/** A concurrencyKey as callers write it: numbers are kept as their text. */
const ConcurrencyKey = z.union([z.string().min(1, "must not be empty").max(128), z.number()]).transform((v) => String(v));
const Bound = z.number().int().min(0).max(MAX_CONCURRENCY_BOUND);

/**
 * A limit the API names: a named limit, or a task's inline limit under the name Trigger.dev derives
 * for it, `task/<task id>` (what `list` shows; a trigger cannot name it).
 */
const LIMIT_PATH_NAME = /^(?:[a-zA-Z0-9_-]{1,122}|task\/.{1,250})$/;
export const ConcurrencyLimitParams = z.object({
  name: z.string().regex(LIMIT_PATH_NAME, "must be 1-122 letters, digits, `_` or `-`, or task/<task id>").describe("The limit's name, or task/<task id> for a task's inline limit"),
});

/** GET /api/v1/concurrency-limits/{name}?concurrencyKey=… */
export const RetrieveConcurrencyLimitQuery = z.object({ concurrencyKey: ConcurrencyKey.optional() });

/** Offset pages: `page` is 1-based; `perPage` defaults to 20 and is capped at 100. */
export const ListConcurrencyLimitsQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).optional(),
  perPage: z.coerce.number().int().min(1).max(1_000_000).optional(),
});

/**
 * POST /api/v1/concurrency-limits/{name}/override: the limit's own bounds (`perKey`, `total`; 0
 * starts nothing), or with `concurrencyKey` a temporary `perKey` for that key alone (`ttl`: a
 * duration such as "7d" or seconds; default 7 days, at most 30).
 */
export const OverrideConcurrencyLimitBody = z
  .object({
    perKey: Bound.optional(),
    total: Bound.optional(),
    concurrencyKey: ConcurrencyKey.optional(),
    ttl: z.union([z.string().min(1).max(32), z.number().int().positive().max(KEY_OVERRIDE_TTL_MAX_S)]).optional(),
  })
  .strict()
  .describe(
    "Either the limit's own bounds (`perKey` and/or `total`, at least one; no `ttl`) or, with `concurrencyKey`, that key's `perKey` (required; no `total`) and an optional `ttl` (a duration such as \"7d\", or seconds; at most 30 days)",
  )
  .superRefine((body, ctx) => {
    if (body.concurrencyKey !== undefined) {
      if (body.perKey === undefined) ctx.addIssue({ code: "custom", path: ["perKey"], message: "a per-key override needs `perKey`" });
      if (body.total !== undefined) ctx.addIssue({ code: "custom", path: ["total"], message: "`total` is not per key; omit it when overriding one concurrencyKey" });
      return;
    }
    if (body.ttl !== undefined) ctx.addIssue({ code: "custom", path: ["ttl"], message: "`ttl` only applies to a per-key override; pass `concurrencyKey` with it" });
    if (body.perKey === undefined && body.total === undefined) ctx.addIssue({ code: "custom", message: "provide at least one of `perKey` or `total`" });
  });
export type OverrideConcurrencyLimitBody = z.infer<typeof OverrideConcurrencyLimitBody>;

/** POST /api/v1/concurrency-limits/{name}/pause */
export const PauseConcurrencyLimitBody = z.object({ action: z.enum(["pause", "resume"]) });

/** POST /api/v1/concurrency-limits/{name}/reset: the key's override with `concurrencyKey`, else the limit's. */
export const ResetConcurrencyLimitBody = z.object({ concurrencyKey: ConcurrencyKey.optional() }).strict();

const Bounds = z.object({
  /** The bound in force: the override, else the declared one; null: none. */
  current: z.number().nullable(),
  /** The declared bound (svc has no declaration in task code yet: null). */
  base: z.number().nullable(),
  override: z.number().nullable(),
  overriddenAt: z.string().nullable(),
});

/** A limit as Trigger.dev's ConcurrencyLimitItem. */
export const ConcurrencyLimitObject = z.object({
  id: z.string(),
  name: z.string(),
  perKey: Bounds,
  total: Bounds,
  /** EXECUTING runs holding the limit. */
  running: z.number(),
  /** QUEUED runs holding the limit. */
  queued: z.number(),
  /** No run holding the limit starts while paused; runs under way go on. */
  paused: z.boolean(),
});
export type ConcurrencyLimitObject = z.infer<typeof ConcurrencyLimitObject>;

/** One concurrencyKey's view of a limit, as Trigger.dev's ConcurrencyLimitKeyItem. */
export const ConcurrencyLimitKeyObject = z.object({
  name: z.string(),
  concurrencyKey: z.string(),
  perKey: z.object({
    current: z.number().nullable(),
    base: z.number().nullable(),
    override: z.number().nullable(),
    expiresAt: z.string().nullable(),
  }),
  running: z.number(),
  paused: z.boolean(),
});
export type ConcurrencyLimitKeyObject = z.infer<typeof ConcurrencyLimitKeyObject>;

export const ListConcurrencyLimitsResponse = z.object({
  data: z.array(ConcurrencyLimitObject),
  pagination: z.object({ currentPage: z.number(), totalPages: z.number(), count: z.number() }),
});
