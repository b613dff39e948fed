import type { BatchHandle, BatchItem, BatchTriggerOptions, RunHandle, TriggerOptions } from "../client/tasks.ts";
import type { TaskInitOutput } from "./hooks/hook-types.ts";
import { taskConcurrencyOf, type TaskConcurrencyDeclaration } from "./concurrency-limit.ts";
import { isQueue } from "./queue.ts";
import { rateLimitOf } from "./rate-limit.ts";
import { schemaParser, type inferSchemaIn, type inferSchemaOut, type TaskSchema } from "./schema.ts";
import type { QueueOptions, TaskOptions } from "./task-options.ts";
import { batchTriggerAndWait, runPromise, triggerAndWait, type BatchResult, type TaskRunPromise, type TriggerAndWaitOptions } from "./trigger-and-wait.ts";
import { batchTriggerTask, triggerTask } from "./trigger.ts";

export type { QueueOptions, TaskOptions, TaskRunParams, TaskContext, IdempotencyKeyScope } from "./task-options.ts";

/** A declared task; also the handle other code triggers it through. */
export interface Task<TIdentifier extends string = string, TInput = any, TOutput = any> extends Omit<TaskOptions<TIdentifier, any, any, any>, "queue" | "concurrency"> {
  /** The task's queue, a name given as a string made `{ name }`. */
  readonly queue?: QueueOptions;
  /** The concurrency limits its runs hold, validated: the inline one, the named ones by name. */
  readonly concurrency?: TaskConcurrencyDeclaration;
  readonly kind: "STANDARD" | "SCHEDULED";
  /** Declarative cron schedule (set by schedules.task). */
  readonly schedule?: { cron: string; timezone?: string };
  /** Parses a payload before hooks and `run` see it (a schemaTask's schema); throwing fails the run without retry. */
  readonly parsePayload?: (payload: unknown) => unknown;
  /** @internal marker the worker's loader looks for */
  readonly __svcTask: true;
  /**
   * Triggers a run of this task and returns at once (over the API, from anywhere). Inside a run,
   * before a wait, a replay triggers again: wrap it in `step.run` or give an `idempotencyKey`.
   *
   * @example
   * const handle = await sendEmail.trigger({ to: "ada@example.com" }, { tags: ["welcome"] });
   */
  trigger(payload: TInput, options?: TriggerOptions): Promise<RunHandle>;
  /**
   * Triggers runs of this task as one batch and returns at once (up to 1,000 items).
   *
   * @example
   * const batch = await sendEmail.batchTrigger([{ payload: { to: "a@example.com" } }, { payload: { to: "b@example.com" } }]);
   */
  batchTrigger(items: BatchItem<TInput>[], options?: BatchTriggerOptions): Promise<BatchHandle>;
  /**
   * Inside a run: triggers a run of this task and waits for it, checkpointed. Triggered once, with
   * the wait's record: a replay waits on the same child.
   *
   * @example
   * const result = await sendEmail.triggerAndWait({ to: "ada@example.com" });
   * const output = await sendEmail.triggerAndWait({ to: "ada@example.com" }).unwrap(); // throws a SubtaskUnwrapError if it failed
   */
  triggerAndWait(payload: TInput, options?: TriggerAndWaitOptions): TaskRunPromise<TOutput>;
  /**
   * Inside a run: triggers runs of this task and waits for all of them; results in item order.
   *
   * @example
   * const { runs } = await sendEmail.batchTriggerAndWait([{ payload: { to: "a@example.com" } }]);
   */
  batchTriggerAndWait(items: { payload: TInput; options?: TriggerAndWaitOptions }[]): Promise<BatchResult<TOutput>>;
}

/** Any task (for helper types and `tasks.trigger<typeof myTask>`). */
export type AnyTask = Task<string, any, any>;
export type TaskIdentifier<T extends AnyTask> = T extends Task<infer I, any, any> ? I : never;
export type TaskPayload<T extends AnyTask> = T extends Task<string, infer P, any> ? P : never;
export type TaskOutput<T extends AnyTask> = T extends Task<string, any, infer O> ? O : never;

/** A task whose payload a schema parses before hooks and `run` see it. */
export interface TaskWithSchema<TIdentifier extends string = string, TSchema extends TaskSchema | undefined = undefined, TOutput = any> extends Task<TIdentifier, inferSchemaIn<TSchema>, TOutput> {
  readonly schema?: TSchema;
}

/** Options of schemaTask: a task's, with the schema its `run` gets the parsed payload of. */
export type TaskWithSchemaOptions<TIdentifier extends string, TSchema extends TaskSchema | undefined, TOutput = unknown, TInitOutput extends TaskInitOutput = any> = TaskOptions<
  TIdentifier,
  inferSchemaOut<TSchema>,
  TOutput,
  TInitOutput
> & { schema?: TSchema };

function declareTask<TIdentifier extends string, TInput, TOutput>(
  options: TaskOptions<TIdentifier, any, TOutput, any>,
  parse: ((payload: unknown) => Promise<unknown>) | undefined,
  what: string,
): Task<TIdentifier, TInput, TOutput> {
  if (!options.id || typeof options.id !== "string") throw new Error(`${what}(): \`id\` is required`);
  if (typeof options.run !== "function") throw new Error(`${what}("${options.id}"): \`run\` must be a function`);
  const id = options.id;
  // A trigger sends what the schema makes of the payload, as Trigger.dev's does.
  const parsed = (payload: unknown) => (parse ? parse(payload) : Promise.resolve(payload));
  const { queue: declaredQueue, rateLimit, concurrency: declaredConcurrency, ...rest } = options;
  const queue = withRateLimit(queueOf(declaredQueue, id), rateLimit, `${what}("${id}")`);
  const concurrency = taskConcurrencyOf(id, declaredConcurrency);
  return {
    ...rest,
    ...(queue ? { queue } : {}),
    ...(concurrency ? { concurrency } : {}),
    kind: "STANDARD",
    ...(parse ? { parsePayload: parse } : {}),
    __svcTask: true,
    trigger: async (payload, triggerOptions) => triggerTask(id, await parsed(payload), triggerOptions),
    batchTrigger: async (items, batchOptions) => batchTriggerTask(id, await Promise.all(items.map(async (item) => ({ ...item, payload: await parsed(item.payload) }))), batchOptions),
    triggerAndWait: (payload, waitOptions) => runPromise(id, parsed(payload).then((p) => triggerAndWait<TOutput>(id, p, waitOptions))),
    batchTriggerAndWait: async (items) => batchTriggerAndWait<TOutput>(id, await Promise.all(items.map(async (item) => ({ ...item, payload: await parsed(item.payload) })))),
  };
}

function queueOf(queue: TaskOptions["queue"], id: string): QueueOptions | undefined {
  if (queue === undefined) return undefined;
  if (typeof queue === "string") return { name: queue };
  if (typeof queue === "object" && queue !== null) {
    if (!isQueue(queue)) return queue;
    return {
      name: queue.name,
      ...(queue.concurrencyLimit !== undefined ? { concurrencyLimit: queue.concurrencyLimit } : {}),
      ...(queue.rateLimit !== undefined ? { rateLimit: queue.rateLimit } : {}),
    };
  }
  throw new Error(`task("${id}"): \`queue\` must be a queue name or { name?, concurrencyLimit?, rateLimit? }`);
}

/**
 * The task's queue with its rate limit: a task's own `rateLimit` is its queue's (the limit is kept
 * per queue), so it may not contradict one its queue declares. Checked here, when the task is declared.
 */
function withRateLimit(queue: QueueOptions | undefined, rateLimit: TaskOptions["rateLimit"], where: string): QueueOptions | undefined {
  if (queue?.rateLimit !== undefined) rateLimitOf(queue.rateLimit, where);
  if (rateLimit === undefined) return queue;
  const own = rateLimitOf(rateLimit, where);
  if (queue?.rateLimit !== undefined) {
    const declared = rateLimitOf(queue.rateLimit, where);
    if (declared.limit !== own.limit || declared.periodMs !== own.periodMs) {
      throw new Error(`${where}: \`rateLimit\` differs from its queue's (${queue.name ?? "its queue"}): declare it once, on the task or on the queue`);
    }
  }
  return { ...queue, rateLimit };
}

/**
 * Declares a task. Export it from a file in one of your task folders; the worker finds it there.
 * Trigger.dev v4's `task()`: the same options, hooks and handle methods (see TaskOptions for what
 * each hook means when a run is replayed after a wait).
 *
 * @example
 * export const hello = task({
 *   id: "hello-world",
 *   retry: { maxAttempts: 3 },
 *   run: async (payload: { name: string }, { ctx }) => {
 *     return { greeting: `Hello, ${payload.name}!`, attempt: ctx.attempt.number };
 *   },
 * });
 */
export function task<TIdentifier extends string, TInput = void, TOutput = unknown, TInitOutput extends TaskInitOutput = any>(
  options: TaskOptions<TIdentifier, TInput, TOutput, TInitOutput>,
): Task<TIdentifier, TInput, TOutput> {
  return declareTask<TIdentifier, TInput, TOutput>(options, undefined, "task");
}

/**
 * Declares a task whose payload is parsed by a schema (zod, valibot, arktype … — any Standard
 * Schema —, anything with `parse`, or a function) before hooks and `run` see it. A trigger
 * through the task's handle (`myTask.trigger(payload)`) parses it first too. A payload the schema
 * refuses fails the run at once with a TaskPayloadParsedError (no retry, no hooks).
 *
 * @example
 * import { z } from "zod";
 * export const createUser = schemaTask({
 *   id: "create-user",
 *   schema: z.object({ name: z.string(), age: z.number().int() }),
 *   run: async (payload) => ({ greeting: `Hello ${payload.name}, ${payload.age}` }),
 * });
 */
export function schemaTask<TIdentifier extends string, TSchema extends TaskSchema | undefined = undefined, TOutput = unknown, TInitOutput extends TaskInitOutput = any>(
  options: TaskWithSchemaOptions<TIdentifier, TSchema, TOutput, TInitOutput>,
): TaskWithSchema<TIdentifier, TSchema, TOutput> {
  const parse = options.schema === undefined ? undefined : schemaParser(options.schema);
  return declareTask<TIdentifier, inferSchemaIn<TSchema>, TOutput>(options as TaskOptions<TIdentifier, any, TOutput, any>, parse, "schemaTask") as TaskWithSchema<TIdentifier, TSchema, TOutput>;
}

/** Used by schedules.task and the worker's loader. */
export function isTask(value: unknown): value is Task {
  return typeof value === "object" && value !== null && (value as { __svcTask?: unknown }).__svcTask === true;
}
