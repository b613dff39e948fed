// The global functions (`runs.list`, `tasksClient.trigger`, `auth.withAuth`, …). Each call builds
// a client from the configuration of the caller's async context at the moment of the call:
// environment variables < configure() < enclosing withAuth scopes.
import { ApiClient, FixedConfig, type CreatePublicTokenOptions, type CreateTriggerTokenOptions } from "./api-client.ts";
import { ambientConfig } from "./auth-scope.ts";
import type { ClientConfig } from "./config.ts";
import type { BatchesResource } from "./batches.ts";
import type { ConcurrencyLimitsResource } from "./concurrency-limits.ts";
import type { EnvVarsResource } from "./envvars.ts";
import type { IdempotencyKeysResource } from "./idempotency-keys.ts";
import type { RunsResource } from "./runs.ts";
import type { SchedulesResource } from "./schedules.ts";
import type { QueuesResource } from "./queues.ts";
import type { SessionsResource } from "./sessions.ts";
import type { StreamsResource } from "./streams.ts";
import type { TasksResource } from "./tasks.ts";
import type { WaitpointsResource } from "./waitpoints.ts";

/**
 * A client for the current async context's configuration (what a global call right now would use).
 *
 * @example
 * const client = currentApiClient();
 * console.log(client.config.baseURL);
 */
export function currentApiClient(): ApiClient {
  return new ApiClient(new FixedConfig(ambientConfig.resolve()));
}

/**
 * Sets the global client configuration, replacing the previous one. Fields left out fall back
 * to `SERVICE_SECRET_KEY`, `SERVICE_API_URL` (default `http://localhost:3030`) and
 * `SERVICE_PREVIEW_BRANCH`, read at each call.
 *
 * @example
 * configure({ secretKey: process.env.SERVICE_SECRET_KEY, baseURL: "https://svc.example.com" });
 */
export function configure(config: ClientConfig): void {
  ambientConfig.configure(config);
}

/**
 * Runs `fn` with `config` applied on top of the current configuration, for the calls made inside
 * it (and only those: concurrent calls elsewhere are unaffected), then restores the previous
 * configuration, also when `fn` throws. Nested calls compose: an inner `{ previewBranch }` inside
 * an outer `{ secretKey }` uses both. Where AsyncLocalStorage is unavailable (some non-Node
 * runtimes), the override swaps the global configuration for the duration of `fn` and is NOT
 * safe with concurrent calls.
 *
 * @example
 * await auth.withAuth({ secretKey: process.env.PROD_KEY }, async () => {
 *   await tasks.trigger("send-email", { to: "ada@example.com" }); // uses the prod key
 * });
 */
export function withAuth<T>(config: ClientConfig, fn: () => Promise<T> | T): Promise<T> {
  return ambientConfig.withAuth(config, fn);
}

/**
 * Credentials and public tokens.
 *
 * @example
 * auth.configure({ secretKey: "svc_dev_…" });
 * const token = await auth.createPublicToken({ scopes: { read: { runs: ["run_abc"] } } });
 * await auth.withAuth({ previewBranch: "feature-x" }, () => envvars.list("proj_abc", "preview"));
 */
export const auth = {
  configure,
  withAuth,
  /**
   * Mints a public access token (default lifetime 1 hour) with the current secret key.
   * Each scope id field takes one id, an array of ids, or `true` for all of that type.
   *
   * @example
   * const token = await auth.createPublicToken({
   *   scopes: { read: { runs: ["run_abc"], sessions: "session_1" }, write: { waitpoints: true } },
   *   expirationTime: "15m",
   * });
   */
  createPublicToken: (options?: CreatePublicTokenOptions) => currentApiClient().createPublicToken(options),
  /**
   * A token that may trigger only these task(s).
   *
   * @example
   * const token = await auth.createTriggerPublicToken("upload-avatar");
   */
  createTriggerPublicToken: (taskId: string | string[], options?: CreateTriggerTokenOptions) =>
    currentApiClient().createTriggerPublicToken(taskId, options),
  /**
   * A token that may batch-trigger only these task(s).
   *
   * @example
   * const token = await auth.createBatchTriggerPublicToken("resize");
   */
  createBatchTriggerPublicToken: (taskId: string | string[], options?: CreateTriggerTokenOptions) =>
    currentApiClient().createBatchTriggerPublicToken(taskId, options),
};

/**
 * Runs: list, retrieve, poll, cancel, replay, reschedule, tags, and a run's result, trace and events.
 *
 * @example
 * const run = await runs.retrieve("run_abc");
 * const finished = await runs.poll(await tasks.trigger("hello-world", { name: "Ada" }));
 * for await (const failed of runs.list({ status: "FAILED", period: "1d" })) await runs.replay(failed.id);
 */
export const runs: Pick<RunsResource, "list" | "retrieve" | "poll" | "cancel" | "replay" | "reschedule" | "addTags" | "result" | "trace" | "events"> = {
  list: ((...args: Parameters<RunsResource["list"]>) => currentApiClient().runs.list(...(args as [string]))) as RunsResource["list"],
  retrieve: (runId) => currentApiClient().runs.retrieve(runId),
  poll: (run, options) => currentApiClient().runs.poll(run, options),
  cancel: (runId) => currentApiClient().runs.cancel(runId),
  replay: (runId, overrides) => currentApiClient().runs.replay(runId, overrides),
  reschedule: (runId, options) => currentApiClient().runs.reschedule(runId, options),
  addTags: (runId, tags) => currentApiClient().runs.addTags(runId, tags),
  result: (runId) => currentApiClient().runs.result(runId),
  trace: (runId) => currentApiClient().runs.trace(runId),
  events: (runId) => currentApiClient().runs.events(runId),
};

/**
 * Batches: retrieve one, and its runs' results.
 *
 * @example
 * const { items } = await batches.results(handle.batchId);
 */
export const batches: Pick<BatchesResource, "retrieve" | "results"> = {
  retrieve: (batchId) => currentApiClient().batches.retrieve(batchId),
  results: (batchId) => currentApiClient().batches.results(batchId),
};

/**
 * Idempotency keys: free one so the next trigger with it makes a new run.
 *
 * @example
 * await idempotencyKeys.reset("charge-order", "order-7");
 */
export const idempotencyKeys: Pick<IdempotencyKeysResource, "reset"> = {
  reset: (taskIdentifier, key) => currentApiClient().idempotencyKeys.reset(taskIdentifier, key),
};

/**
 * Environment variables of a project's environments (secret key or personal access token).
 *
 * @example
 * await envvars.upload("proj_abc", "prod", { variables: { LOG_LEVEL: "info" }, override: true });
 */
export const envvars: Pick<EnvVarsResource, "list" | "retrieve" | "upload" | "create" | "update" | "del"> = {
  list: (projectRef, env) => currentApiClient().envvars.list(projectRef, env),
  retrieve: (projectRef, env, name) => currentApiClient().envvars.retrieve(projectRef, env, name),
  upload: (projectRef, env, params) => currentApiClient().envvars.upload(projectRef, env, params),
  create: (projectRef, env, params) => currentApiClient().envvars.create(projectRef, env, params),
  update: (projectRef, env, name, params) => currentApiClient().envvars.update(projectRef, env, name, params),
  del: (projectRef, env, name) => currentApiClient().envvars.del(projectRef, env, name),
};

/**
 * Queues: list and retrieve them, pause and resume, override the concurrencyLimit and reset it
 * (secret key).
 *
 * @example
 * await queues.pause({ type: "custom", name: "emails" });
 * await queues.overrideConcurrencyLimit({ type: "custom", name: "emails" }, 2);
 */
export const queues: Pick<QueuesResource, "list" | "retrieve" | "pause" | "resume" | "overrideConcurrencyLimit" | "resetConcurrencyLimit"> = {
  list: (options) => currentApiClient().queues.list(options),
  retrieve: (queue) => currentApiClient().queues.retrieve(queue),
  pause: (queue) => currentApiClient().queues.pause(queue),
  resume: (queue) => currentApiClient().queues.resume(queue),
  overrideConcurrencyLimit: (queue, limit) => currentApiClient().queues.overrideConcurrencyLimit(queue, limit),
  resetConcurrencyLimit: (queue) => currentApiClient().queues.resetConcurrencyLimit(queue),
};

/**
 * Named concurrency limits (a trigger's `concurrency` option): list and retrieve them (or one
 * concurrencyKey's pool), override their bounds or one key's, pause and resume, reset (secret key).
 *
 * @example
 * await concurrencyLimits.override("openai", { total: 20 });
 * await concurrencyLimits.pause("openai");
 */
export const concurrencyLimits: Pick<ConcurrencyLimitsResource, "list" | "retrieve" | "override" | "reset" | "pause" | "resume"> = {
  list: (options) => currentApiClient().concurrencyLimits.list(options),
  retrieve: ((name: string, options?: { concurrencyKey: string }) =>
    options ? currentApiClient().concurrencyLimits.retrieve(name, options) : currentApiClient().concurrencyLimits.retrieve(name)) as ConcurrencyLimitsResource["retrieve"],
  override: ((name: string, override: Parameters<ConcurrencyLimitsResource["override"]>[1]) =>
    currentApiClient().concurrencyLimits.override(name, override)) as ConcurrencyLimitsResource["override"],
  reset: ((name: string, options?: { concurrencyKey: string }) =>
    options ? currentApiClient().concurrencyLimits.reset(name, options) : currentApiClient().concurrencyLimits.reset(name)) as ConcurrencyLimitsResource["reset"],
  pause: (name) => currentApiClient().concurrencyLimits.pause(name),
  resume: (name) => currentApiClient().concurrencyLimits.resume(name),
};

/**
 * Triggering over HTTP (merged into `tasks` with the in-run helpers).
 *
 * @example
 * const { id } = await tasks.trigger("hello-world", { name: "Ada" });
 */
export const tasksClient: Pick<TasksResource, "trigger" | "batchTrigger" | "batchTriggerItems"> = {
  trigger: (taskId, payload, options) => currentApiClient().tasks.trigger(taskId, payload, options),
  batchTrigger: (taskId, items, options) => currentApiClient().tasks.batchTrigger(taskId, items, options),
  batchTriggerItems: (items, options) => currentApiClient().tasks.batchTriggerItems(items, options),
};

/**
 * Waitpoint tokens from a backend (merged into `wait` with the in-run helpers).
 *
 * @example
 * const token = await wait.createToken({ timeout: "1h" });
 * await wait.completeToken(token.id, { approved: true });
 */
export const waitClient: Pick<WaitpointsResource, "createToken" | "completeToken" | "retrieveToken" | "listTokens"> = {
  createToken: (options) => currentApiClient().waitpoints.createToken(options),
  completeToken: (token, output) => currentApiClient().waitpoints.completeToken(token, output),
  retrieveToken: (token) => currentApiClient().waitpoints.retrieveToken(token),
  listTokens: (filter) => currentApiClient().waitpoints.listTokens(filter),
};

/**
 * Imperative cron schedules (merged into `schedules` with `schedules.task`).
 *
 * @example
 * await schedules.create({ task: "daily-report", cron: "0 9 * * *", deduplicationKey: "daily" });
 */
export const schedulesClient: Pick<
  SchedulesResource,
  "create" | "list" | "retrieve" | "update" | "activate" | "deactivate" | "del" | "timezones"
> = {
  create: (options) => currentApiClient().schedules.create(options),
  list: (options) => currentApiClient().schedules.list(options),
  retrieve: (id) => currentApiClient().schedules.retrieve(id),
  update: (id, options) => currentApiClient().schedules.update(id, options),
  activate: (id) => currentApiClient().schedules.activate(id),
  deactivate: (id) => currentApiClient().schedules.deactivate(id),
  del: (id) => currentApiClient().schedules.del(id),
  timezones: (options) => currentApiClient().schedules.timezones(options),
};

/**
 * Sessions over HTTP: start, read, change and close them, and their `.in` / `.out` channels
 * (merged into `sessions` with the in-run helpers).
 *
 * @example
 * const session = await sessionsClient.start({ type: "chat.agent", externalId: "chat-42", taskIdentifier: "chat-agent", triggerConfig: { basePayload: {} } });
 * await sessionsClient.append("chat-42", "in", { text: "hello" });
 * for await (const record of sessionsClient.subscribe("chat-42", "out")) console.log(parseRecordData(record.data));
 */
export const sessionsClient: Pick<
  SessionsResource,
  "start" | "retrieve" | "update" | "close" | "list" | "endAndContinue" | "listRuns" | "append" | "records" | "subscribe"
> = {
  start: (options) => currentApiClient().sessions.start(options),
  retrieve: (ref) => currentApiClient().sessions.retrieve(ref),
  update: (ref, options) => currentApiClient().sessions.update(ref, options),
  close: (ref, options) => currentApiClient().sessions.close(ref, options),
  list: (filter) => currentApiClient().sessions.list(filter),
  endAndContinue: (ref, options) => currentApiClient().sessions.endAndContinue(ref, options),
  listRuns: (ref, query) => currentApiClient().sessions.listRuns(ref, query),
  append: (ref, io, value, options) => currentApiClient().sessions.append(ref, io, value, options),
  records: (ref, io, options) => currentApiClient().sessions.records(ref, io, options),
  subscribe: (ref, io, options) => currentApiClient().sessions.subscribe(ref, io, options),
};

/**
 * A run's realtime and input streams over HTTP, with the ambient configuration (`streams.read`,
 * `streams.input().send` use it).
 */
export const streamsClient: Pick<StreamsResource, "read" | "append" | "sendInput"> = {
  read: (runId, key, options) => currentApiClient().streams.read(runId, key, options),
  append: (runId, key, value, options) => currentApiClient().streams.append(runId, key, value, options),
  sendInput: (runId, key, data) => currentApiClient().streams.sendInput(runId, key, data),
};
