const LIMIT_MARK = Symbol.for("svc.runtime.concurrencyLimit");

/** A limit's name: as Trigger.dev's (and svc's API) allows it. */
const LIMIT_NAME = /^[a-zA-Z0-9_-]{1,122}$/;
/** A declared bound: whole numbers from 1 (blocking everything is a pause or an override, not a declaration). */
const MAX_BOUND = 100_000;

/**
 * One limit's bounds, wherever a limit appears. `perKey` caps each `concurrencyKey`'s executing runs
 * (runs without a key share one pool); `total` caps all of them together. Either alone or both.
 */
export interface ConcurrencyShape {
  /** @default no cap per key */
  perKey?: number;
  /** @default no cap in all */
  total?: number;
}

/** A named, shareable concurrency limit (Trigger.dev's `ConcurrencyLimitOptions`). */
export interface ConcurrencyLimitOptions extends ConcurrencyShape {
  /** 1-122 letters, digits, `_` or `-`. */
  name: string;
}
export type ConcurrencyLimit = ConcurrencyLimitOptions;

/**
 * A task's `concurrency`: one limit or an array of them. An inline shape (`{ total: 5 }`) caps this
 * task's runs; a named limit (made by `concurrencyLimit()`, or its name) is shared by every task
 * and trigger that holds it. At most one inline limit and two named ones.
 */
export type TaskConcurrency = ConcurrencyShape | ConcurrencyLimit | string | Array<ConcurrencyShape | ConcurrencyLimit | string>;

/** A task's `concurrency` as the worker registers it: the inline limit, and the named ones by name (with their bounds when the task gave the object). */
export interface TaskConcurrencyDeclaration {
  inline?: ConcurrencyShape;
  limits: { name: string; bounds?: ConcurrencyShape }[];
}

/**
 * Declares a named concurrency limit that several tasks can hold (Trigger.dev's `concurrencyLimit()`):
 * every run holding it counts against the same pools, whatever its task or queue. The worker that
 * registers a task holding it registers its bounds as the limit's declared ones (what the
 * concurrency-limits API's `reset` returns to); a name several tasks declare with different bounds
 * keeps the strictest of each. Export it from a task file, and a task may also name it by string.
 *
 * @example
 * export const openaiLimit = concurrencyLimit({ name: "openai", total: 25 });
 *
 * export const generateSummary = task({
 *   id: "generate-summary",
 *   concurrency: [{ total: 5 }, openaiLimit], // at most 5 of this task, and at most 25 holding "openai"
 *   run: async (payload) => {},
 * });
 */
export function concurrencyLimit(options: ConcurrencyLimitOptions): ConcurrencyLimit {
  if (!options || typeof options !== "object") throw new Error("concurrencyLimit(): expected { name, total?, perKey? }");
  limitName(options.name, "concurrencyLimit()");
  shapeOf(options, `concurrencyLimit("${options.name}")`);
  return Object.defineProperty(options, LIMIT_MARK, { value: true, enumerable: false });
}

/** Whether `value` was made by `concurrencyLimit()` (the worker's loader collects exported ones). */
export function isConcurrencyLimit(value: unknown): value is ConcurrencyLimit {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[LIMIT_MARK] === true;
}

/**
 * Validates a task's `concurrency` and puts it in the shape the worker registers, as Trigger.dev's
 * task() does (normalizeTaskConcurrency): at most one inline limit, at most two named limits, names
 * of 1-122 letters, digits, `_` or `-`, bounds whole numbers from 1 to 100000. Throws an error naming
 * the task.
 */
export function taskConcurrencyOf(taskId: string, concurrency: TaskConcurrency | undefined): TaskConcurrencyDeclaration | undefined {
  if (concurrency === undefined || concurrency === null) return undefined;
  const where = `task("${taskId}"): concurrency`;
  const items = Array.isArray(concurrency) ? concurrency : [concurrency];
  const inline: ConcurrencyShape[] = [];
  const limits: TaskConcurrencyDeclaration["limits"] = [];
  for (const item of items) {
    if (typeof item === "string") limits.push({ name: limitName(item, where) });
    else if (item && typeof item === "object" && "name" in item) {
      const name = limitName((item as { name: unknown }).name, where);
      limits.push({ name, bounds: shapeOf(item, `${where}: limit "${name}"`) });
    } else if (item && typeof item === "object") inline.push(shapeOf(item, `${where}: the inline limit`));
    else throw new Error(`${where}: expected a limit ({ total?, perKey? }), a concurrencyLimit() or a limit's name, got ${JSON.stringify(item)}`);
  }
  if (inline.length > 1) throw new Error(`${where} accepts at most one inline limit. Give shared limits a name with concurrencyLimit().`);
  if (limits.length > 2) throw new Error(`${where} accepts at most two named limits.`);
  const names = limits.map((l) => l.name);
  if (new Set(names).size !== names.length) throw new Error(`${where} names the limit "${names.find((n, i) => names.indexOf(n) !== i)}" twice.`);
  return { ...(inline[0] ? { inline: inline[0] } : {}), limits };
}

/** The name of the limit a task's inline `concurrency` declares: its own, as Trigger.dev derives it (a named limit cannot take it: names hold no `/`). */
export function inlineLimitName(taskId: string): string {
  return `task/${taskId}`;
}

function limitName(name: unknown, where: string): string {
  if (typeof name !== "string" || !LIMIT_NAME.test(name)) {
    throw new Error(`${where}: limit name ${JSON.stringify(name)} is not 1-122 characters using only letters, numbers, underscores and hyphens.`);
  }
  return name;
}

function shapeOf(value: object, where: string): ConcurrencyShape {
  const shape: ConcurrencyShape = {};
  for (const bound of ["perKey", "total"] as const) {
    const n = (value as Record<string, unknown>)[bound];
    if (n === undefined) continue;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_BOUND) {
      throw new Error(`${where}: \`${bound}\` must be a whole number from 1 to ${MAX_BOUND}, got ${JSON.stringify(n)}`);
    }
    shape[bound] = n;
  }
  return shape;
}
