// How svc covers each method of @trigger.dev/core's API client (what the published SDK calls):
// served (and which test file drives it through the real SDK or, where the SDK's namespaces do not
// reach it, its API client), planned (where), not served, out of scope (needs Trigger.dev's hosted
// platform), or a helper that makes no request. `calls` are the requests the installed SDK makes,
// as scripts/sdk-api-client.ts reads them: test/sdk-coverage.test.ts fails when they change, when
// a method is missing here, and when a served call has no route (or a planned one got one: flip it
// to served with its test). docs/trigger-sdk.md shows this as a table (`pnpm docs:sdk`).

interface Common {
  /** `METHOD /path` of each request, parameters as `{name}`, sorted (what the installed SDK makes). */
  calls: string[];
  note?: string;
}

export type Classification = Common &
  (
    | {
        status: "served";
        /** Test files (from the repository root) that drive these calls. */
        tests: string[];
        /** Calls of the method svc does not serve, with why. */
        notServed?: Record<string, string>;
      }
    | { status: "planned"; plan: string }
    | { status: "not-served"; reason: string }
    | { status: "out-of-scope"; reason: string }
    | { status: "no-request"; reason: string }
  );

const DEPLOYMENTS = "deployments are built and hosted by Trigger.dev's platform; svc runs the workers you start yourself (deployment.md)";
const PROMPTS = "prompts are managed versions of AI prompts stored by Trigger.dev's platform";
const CLICKHOUSE = "TRQL queries, dashboards and reports run on Trigger.dev's ClickHouse";
const ENGINE_V1 = "the `engine/v1` task-runtime protocol: only task code running on Trigger.dev's runtime calls it; svc runs tasks written with @svc/runtime";
const CHAT_SNAPSHOTS = "chat.agent snapshots live in Trigger.dev's object storage";
const WEBHOOKS = "Trigger.dev's webhook endpoints (inbound deliveries, waiters, secrets) have no svc counterpart and no issue yet";
const QUEUES = "issue 34 §4 (queues and concurrency limits)";

export const SDK_COVERAGE: Record<string, Classification> = {
  abortBulkAction: { calls: ["POST /api/v1/bulk-actions/{bulkActionId}/abort"], status: "served", tests: ["packages/api/test/sdk-bulk-actions.test.ts"] },
  activateSchedule: { calls: ["POST /api/v1/schedules/{scheduleId}/activate"], status: "served", tests: ["packages/api/test/sdk-schedules.test.ts"] },
  addDashboardWidget: { calls: ["POST /api/v1/query/dashboards/{dashboardId}/widgets"], status: "out-of-scope", reason: CLICKHOUSE },
  addTags: { calls: ["POST /api/v1/runs/{runId}/tags"], status: "served", tests: ["packages/api/test/sdk-run-changes.test.ts"], note: "the SDK's `tags.add` calls it from inside a Trigger.dev task; from a backend, call the API client or svc's `runs.addTags`" },
  appendToSessionStream: { calls: ["POST /realtime/v1/sessions/{sessionIdOrExternalId}/{io}/append", "POST /realtime/v1/sessions/{sessionIdOrExternalId}/channels/{channel}/{io}/append"], status: "served", tests: ["packages/api/test/sdk-sessions.test.ts"], notServed: { "POST /realtime/v1/sessions/{sessionIdOrExternalId}/channels/{channel}/{io}/append": "named channels" } },
  appendToStream: { calls: ["POST /realtime/v1/streams/{runId}/{target}/{streamId}/append"], status: "served", tests: ["packages/api/test/sdk-streams.test.ts"] },
  batchTriggerV3: { calls: ["POST /api/v2/tasks/batch"], status: "served", tests: ["packages/api/test/batches.test.ts"], note: "the single-call batch of SDKs before 4.3.1" },
  cancelRun: { calls: ["POST /api/v2/runs/{runId}/cancel"], status: "served", tests: ["packages/api/test/sdk-runs.test.ts"] },
  cancelWebhookWaiter: { calls: ["POST /api/v1/webhooks/waiters/{waiterId}/cancel"], status: "not-served", reason: WEBHOOKS },
  closeSession: { calls: ["POST /api/v1/sessions/{sessionIdOrExternalId}/close"], status: "served", tests: ["packages/api/test/sdk-sessions.test.ts"] },
  completeWaitpointToken: { calls: ["POST /api/v1/waitpoints/tokens/{friendlyId}/complete"], status: "served", tests: ["packages/api/test/sdk-waitpoints.test.ts"] },
  createBatch: { calls: ["POST /api/v3/batches"], status: "served", tests: ["packages/api/test/sdk-runs.test.ts"] },
  createBulkAction: { calls: ["POST /api/v1/bulk-actions"], status: "served", tests: ["packages/api/test/sdk-bulk-actions.test.ts"] },
  createChatSnapshotUploadUrl: { calls: ["PUT /api/v1/sessions/{sessionId}/snapshot-url"], status: "out-of-scope", reason: CHAT_SNAPSHOTS },
  createDashboard: { calls: ["POST /api/v1/query/dashboards"], status: "out-of-scope", reason: CLICKHOUSE },
  createEnvVar: { calls: ["POST /api/v1/projects/{projectRef}/envvars/{slug}"], status: "served", tests: ["packages/api/test/sdk-credentials.test.ts"] },
  createInputStreamWaitpoint: {
    calls: ["POST /api/v1/runs/{runFriendlyId}/input-streams/wait"],
    status: "served",
    tests: ["packages/api/test/sdk-streams.test.ts"],
    note: "a token the run's next input chunk completes; svc task code waits with streams.input().wait(), which makes its own",
  },
  createPromptOverride: { calls: ["POST /api/v1/prompts/{slug}/override"], status: "out-of-scope", reason: PROMPTS },
  createPublicToken: { calls: ["POST /api/v1/auth/public-tokens"], status: "served", tests: ["packages/api/test/sdk-credentials.test.ts"], note: "the SDK's `auth.createPublicToken` calls it only with a run token or an additional API key, which svc does not issue; with a secret key it signs locally (`generateJWTClaims`)" },
  createSchedule: { calls: ["POST /api/v1/schedules"], status: "served", tests: ["packages/api/test/sdk-schedules.test.ts"] },
  createSession: { calls: ["POST /api/v1/sessions"], status: "served", tests: ["packages/api/test/sdk-sessions.test.ts"] },
  createSessionStreamWaitpoint: { calls: ["POST /api/v1/runs/{runFriendlyId}/session-streams/wait"], status: "out-of-scope", reason: "called only by `session.in.wait()` inside a task on Trigger.dev's runtime (part of its task-runtime protocol); svc's own session waits are in sessions.md" },
  createStream: {
    calls: ["PUT /realtime/v1/streams/{runId}/{target}/{streamId}"],
    status: "served",
    tests: ["packages/api/test/sdk-streams.test.ts"],
    note: "answers version v1 without S2 credentials; chunks are added with appendToStream (svc task code writes through its worker, not the NDJSON ingest of Trigger.dev's task runtime)",
  },
  createUploadPayloadUrl: { calls: ["PUT /api/v2/packets/{filename}"], status: "served", tests: ["packages/api/test/sdk-runs.test.ts"] },
  createWaitpointToken: { calls: ["POST /api/v1/waitpoints/tokens"], status: "served", tests: ["packages/api/test/sdk-waitpoints.test.ts"] },
  createWebhookWaiter: { calls: ["POST /api/v1/webhooks/endpoints/{endpointId}/waiters"], status: "not-served", reason: WEBHOOKS },
  deactivateSchedule: { calls: ["POST /api/v1/schedules/{scheduleId}/deactivate"], status: "served", tests: ["packages/api/test/sdk-schedules.test.ts"] },
  deleteDashboard: { calls: ["DELETE /api/v1/query/dashboards/{dashboardId}"], status: "out-of-scope", reason: CLICKHOUSE },
  deleteDashboardWidget: { calls: ["DELETE /api/v1/query/dashboards/{dashboardId}/widgets/{widgetId}"], status: "out-of-scope", reason: CLICKHOUSE },
  deleteEnvVar: { calls: ["DELETE /api/v1/projects/{projectRef}/envvars/{slug}/{key}"], status: "served", tests: ["packages/api/test/sdk-credentials.test.ts"] },
  deleteSchedule: { calls: ["DELETE /api/v1/schedules/{scheduleId}"], status: "served", tests: ["packages/api/test/sdk-schedules.test.ts"] },
  endAndContinueSession: { calls: ["POST /api/v1/sessions/{sessionIdOrExternalId}/end-and-continue"], status: "served", tests: ["packages/api/test/sessions.test.ts"] },
  executeQuery: { calls: ["POST /api/v1/query"], status: "out-of-scope", reason: CLICKHOUSE },
  fetchClient: { calls: [], status: "no-request", reason: "a fetch that adds the client's headers" },
  fetchStream: {
    calls: ["GET /realtime/v1/streams/{runId}/{streamKey}"],
    status: "served",
    tests: ["packages/api/test/sdk-streams.test.ts", "test/scenario-run-streams.test.ts", "test/streams-browser.test.ts"],
  },
  generateJWTClaims: { calls: ["POST /api/v1/auth/jwt/claims"], status: "served", tests: ["packages/api/test/sdk-credentials.test.ts"] },
  generateWebhookEndpointSecret: { calls: ["POST /api/v1/webhooks/endpoints/{endpointId}/rotate-secret"], status: "not-served", reason: WEBHOOKS },
  getAccessToken: { calls: [], status: "no-request", reason: "the configured credential" },
  getAuthenticationHeaders: { calls: [], status: "no-request", reason: "the Authorization header" },
  getBatchResults: { calls: ["GET /api/v1/batches/{batchId}/results"], status: "served", tests: ["packages/api/test/sdk-run-results.test.ts"] },
  getChatSnapshotUrl: { calls: ["GET /api/v1/sessions/{sessionId}/snapshot-url"], status: "out-of-scope", reason: CHAT_SNAPSHOTS },
  getHeaders: { calls: [], status: "no-request", reason: "the request headers" },
  getPayloadUrl: { calls: ["GET /api/v1/packets/{filename}"], status: "served", tests: ["packages/api/test/sdk-runs.test.ts"] },
  getQuerySchema: { calls: ["GET /api/v1/query/schema"], status: "out-of-scope", reason: CLICKHOUSE },
  getReport: { calls: ["GET /api/v1/reports/{key}"], status: "out-of-scope", reason: CLICKHOUSE },
  getRunMetadata: { calls: ["GET /api/v1/runs/{runId}/metadata"], status: "served", tests: ["packages/api/test/sdk-metadata.test.ts"], note: "Trigger.dev's `metadata.refresh()` in a task; svc's tasks read their run's metadata without HTTP (packages/worker/test/task-metadata.test.ts)" },
  getRunPacketUrl: { calls: ["GET /api/v1/runs/{runId}/packets/{field}"], status: "served", tests: ["packages/api/test/sdk-run-results.test.ts"] },
  getRunResult: { calls: ["GET /api/v1/runs/{runId}/result"], status: "served", tests: ["packages/api/test/sdk-run-results.test.ts", "test/sdk-run-trace.test.ts"] },
  getSessionTranscript: { calls: ["GET /api/v1/sessions/{sessionId}/transcript"], status: "out-of-scope", reason: "chat.agent snapshots live in Trigger.dev's object storage: the transcript is read from them" },
  importEnvVars: { calls: ["POST /api/v1/projects/{projectRef}/envvars/{slug}/import"], status: "served", tests: ["packages/api/test/sdk-credentials.test.ts"] },
  initializeSessionStream: { calls: ["PUT /realtime/v1/sessions/{sessionIdOrExternalId}/{io}", "PUT /realtime/v1/sessions/{sessionIdOrExternalId}/channels/{channel}/{io}"], status: "not-served", reason: "it hands the SDK S2 credentials to write `.out` to S2 directly; svc's task code appends through its own runtime (sessions.md)" },
  listBulkActions: { calls: ["GET /api/v1/bulk-actions"], status: "served", tests: ["packages/api/test/sdk-bulk-actions.test.ts"] },
  listConcurrencyLimits: { calls: ["GET /api/v1/concurrency-limits"], status: "served", tests: ["packages/api/test/sdk-concurrency-limits.test.ts", "packages/worker/test/named-concurrency-limits.test.ts"] },
  listDashboards: { calls: ["GET /api/v1/query/dashboards"], status: "out-of-scope", reason: CLICKHOUSE },
  listDeployments: { calls: ["GET /api/v1/deployments"], status: "out-of-scope", reason: DEPLOYMENTS },
  listEnvVars: { calls: ["GET /api/v1/projects/{projectRef}/envvars/{slug}"], status: "served", tests: ["packages/api/test/sdk-credentials.test.ts"] },
  listProjectRuns: { calls: ["GET /api/v1/projects/{projectRef}/runs"], status: "served", tests: ["packages/api/test/sdk-credentials.test.ts"] },
  listPrompts: { calls: ["GET /api/v1/prompts"], status: "out-of-scope", reason: PROMPTS },
  listPromptVersions: { calls: ["GET /api/v1/prompts/{slug}/versions"], status: "out-of-scope", reason: PROMPTS },
  listQueues: { calls: ["GET /api/v1/queues"], status: "served", tests: ["packages/api/test/sdk-queues.test.ts", "packages/worker/test/queue-controls.test.ts"] },
  listRunEvents: { calls: ["GET /api/v1/runs/{runId}/events"], status: "served", tests: ["test/sdk-run-trace.test.ts"] },
  listRuns: { calls: ["GET /api/v1/runs"], status: "served", tests: ["packages/api/test/sdk-runs.test.ts"] },
  listSchedules: { calls: ["GET /api/v1/schedules"], status: "served", tests: ["packages/api/test/sdk-schedules.test.ts"] },
  listSessions: { calls: ["GET /api/v1/sessions"], status: "served", tests: ["packages/api/test/sdk-sessions.test.ts"] },
  listWaitpointTokens: { calls: ["GET /api/v1/waitpoints/tokens"], status: "served", tests: ["packages/api/test/sdk-waitpoints.test.ts"] },
  listWebhookDeliveries: { calls: ["GET /api/v1/webhooks/deliveries"], status: "not-served", reason: WEBHOOKS },
  listWebhookEndpoints: { calls: ["GET /api/v1/webhooks/endpoints"], status: "not-served", reason: WEBHOOKS },
  overrideConcurrencyLimit: { calls: ["POST /api/v1/concurrency-limits/{name}/override"], status: "served", tests: ["packages/api/test/sdk-concurrency-limits.test.ts", "packages/worker/test/named-concurrency-limits.test.ts"] },
  overrideConcurrencyLimitKey: { calls: ["POST /api/v1/concurrency-limits/{name}/override"], status: "served", tests: ["packages/api/test/sdk-concurrency-limits.test.ts", "packages/worker/test/named-concurrency-limits.test.ts"] },
  overrideQueueConcurrencyLimit: { calls: ["POST /api/v1/queues/{value}/concurrency/override"], status: "served", tests: ["packages/api/test/sdk-queues.test.ts", "packages/worker/test/queue-controls.test.ts"] },
  pauseConcurrencyLimit: { calls: ["POST /api/v1/concurrency-limits/{name}/pause"], status: "served", tests: ["packages/api/test/sdk-concurrency-limits.test.ts", "packages/worker/test/named-concurrency-limits.test.ts"] },
  pauseQueue: { calls: ["POST /api/v1/queues/{value}/pause"], status: "served", tests: ["packages/api/test/sdk-queues.test.ts", "packages/worker/test/queue-controls.test.ts"] },
  promotePromptVersion: { calls: ["POST /api/v1/prompts/{slug}/promote"], status: "out-of-scope", reason: PROMPTS },
  reactivatePromptOverride: { calls: ["POST /api/v1/prompts/{slug}/override/reactivate"], status: "out-of-scope", reason: PROMPTS },
  readSessionStreamRecords: { calls: ["GET /realtime/v1/sessions/{sessionIdOrExternalId}/{io}/records", "GET /realtime/v1/sessions/{sessionIdOrExternalId}/channels/{channel}/{io}/records"], status: "served", tests: ["packages/api/test/session-channels.test.ts"], notServed: { "GET /realtime/v1/sessions/{sessionIdOrExternalId}/channels/{channel}/{io}/records": "named channels" } },
  removePromptOverride: { calls: ["DELETE /api/v1/prompts/{slug}/override"], status: "out-of-scope", reason: PROMPTS },
  replaceDashboard: { calls: ["PUT /api/v1/query/dashboards/{dashboardId}"], status: "out-of-scope", reason: CLICKHOUSE },
  replayRun: { calls: ["POST /api/v1/runs/{runId}/replay"], status: "served", tests: ["packages/api/test/sdk-runs.test.ts", "packages/api/test/sdk-run-changes.test.ts"] },
  replayWebhookDelivery: { calls: ["POST /api/v1/webhooks/deliveries/{deliveryId}/replay"], status: "not-served", reason: WEBHOOKS },
  rescheduleRun: { calls: ["POST /api/v1/runs/{runId}/reschedule"], status: "served", tests: ["packages/api/test/sdk-run-changes.test.ts"] },
  resetConcurrencyLimit: { calls: ["POST /api/v1/concurrency-limits/{name}/reset"], status: "served", tests: ["packages/api/test/sdk-concurrency-limits.test.ts", "packages/worker/test/named-concurrency-limits.test.ts"] },
  resetConcurrencyLimitKey: { calls: ["POST /api/v1/concurrency-limits/{name}/reset"], status: "served", tests: ["packages/api/test/sdk-concurrency-limits.test.ts", "packages/worker/test/named-concurrency-limits.test.ts"] },
  resetIdempotencyKey: { calls: ["POST /api/v1/idempotencyKeys/{idempotencyKey}/reset"], status: "served", tests: ["packages/api/test/sdk-run-changes.test.ts"] },
  resetQueueConcurrencyLimit: { calls: ["POST /api/v1/queues/{value}/concurrency/reset"], status: "served", tests: ["packages/api/test/sdk-queues.test.ts", "packages/worker/test/queue-controls.test.ts"] },
  resolvePrompt: { calls: ["POST /api/v1/prompts/{slug}"], status: "out-of-scope", reason: PROMPTS },
  retrieveBatch: { calls: ["GET /api/v2/batches/{batchId}"], status: "served", tests: ["packages/api/test/sdk-run-results.test.ts"] },
  retrieveBulkAction: { calls: ["GET /api/v1/bulk-actions/{bulkActionId}"], status: "served", tests: ["packages/api/test/sdk-bulk-actions.test.ts"] },
  retrieveConcurrencyLimit: { calls: ["GET /api/v1/concurrency-limits/{name}"], status: "served", tests: ["packages/api/test/sdk-concurrency-limits.test.ts", "packages/worker/test/named-concurrency-limits.test.ts"] },
  retrieveConcurrencyLimitKey: { calls: ["GET /api/v1/concurrency-limits/{name}"], status: "served", tests: ["packages/api/test/sdk-concurrency-limits.test.ts", "packages/worker/test/named-concurrency-limits.test.ts"] },
  retrieveCurrentDeployment: { calls: ["GET /api/v1/deployments/current"], status: "out-of-scope", reason: DEPLOYMENTS },
  retrieveDashboard: { calls: ["GET /api/v1/query/dashboards/{dashboardId}"], status: "out-of-scope", reason: CLICKHOUSE },
  retrieveEnvVar: { calls: ["GET /api/v1/projects/{projectRef}/envvars/{slug}/{key}"], status: "served", tests: ["packages/api/test/sdk-credentials.test.ts"] },
  retrieveQueue: { calls: ["GET /api/v1/queues/{value}"], status: "served", tests: ["packages/api/test/sdk-queues.test.ts", "packages/worker/test/queue-controls.test.ts"] },
  retrieveRun: { calls: ["GET /api/v3/runs/{runId}"], status: "served", tests: ["packages/api/test/sdk-runs.test.ts"] },
  retrieveRunTrace: { calls: ["GET /api/v1/runs/{runId}/trace"], status: "served", tests: ["test/sdk-run-trace.test.ts"], note: "built from what svc records of the run: its attempts, the steps and waits of its ledger, the runs it triggered" },
  retrieveRunTracePage: { calls: ["GET /api/v1/runs/{runId}/trace"], status: "served", tests: ["test/sdk-run-trace.test.ts"] },
  retrieveSchedule: { calls: ["GET /api/v1/schedules/{scheduleId}"], status: "served", tests: ["packages/api/test/sdk-schedules.test.ts"] },
  retrieveSession: { calls: ["GET /api/v1/sessions/{sessionIdOrExternalId}"], status: "served", tests: ["packages/api/test/sdk-sessions.test.ts"] },
  retrieveSpan: { calls: ["GET /api/v1/runs/{runId}/spans/{spanId}"], status: "served", tests: ["test/sdk-run-trace.test.ts"] },
  retrieveWaitpointToken: { calls: ["GET /api/v1/waitpoints/tokens/{friendlyId}"], status: "served", tests: ["packages/api/test/sdk-waitpoints.test.ts"] },
  retrieveWebhookDelivery: { calls: ["GET /api/v1/webhooks/deliveries/{deliveryId}"], status: "not-served", reason: WEBHOOKS },
  retrieveWebhookEndpoint: { calls: ["GET /api/v1/webhooks/endpoints/{endpointId}"], status: "not-served", reason: WEBHOOKS },
  sendInputStream: { calls: ["POST /realtime/v1/streams/{runId}/input/{streamId}"], status: "served", tests: ["packages/api/test/sdk-streams.test.ts", "test/scenario-run-streams.test.ts"] },
  setWebhookEndpointSecret: { calls: ["PUT /api/v1/webhooks/endpoints/{endpointId}/secret"], status: "not-served", reason: WEBHOOKS },
  streamBatchItems: { calls: ["POST /api/v3/batches/{batchId}/items"], status: "served", tests: ["packages/api/test/sdk-runs.test.ts", "packages/api/test/sdk-debounce.test.ts"] },
  subscribeToBatch: { calls: ["GET /realtime/v1/batches/{batchId}"], status: "served", tests: ["packages/api/test/sdk-realtime.test.ts", "packages/api/test/realtime-runs.test.ts", "test/realtime-browser.test.ts"] },
  subscribeToRun: { calls: ["GET /realtime/v1/runs/{runId}"], status: "served", tests: ["packages/api/test/sdk-realtime.test.ts", "packages/api/test/realtime-runs.test.ts", "test/realtime-browser.test.ts"] },
  subscribeToRunsWithTag: { calls: ["GET /realtime/v1/runs"], status: "served", tests: ["packages/api/test/sdk-realtime.test.ts", "packages/api/test/realtime-runs.test.ts", "test/realtime-browser.test.ts"] },
  subscribeToSessionStream: { calls: ["GET /realtime/v1/sessions/{sessionIdOrExternalId}/{io}", "GET /realtime/v1/sessions/{sessionIdOrExternalId}/channels/{channel}/{io}"], status: "served", tests: ["packages/api/test/sdk-sessions.test.ts"], notServed: { "GET /realtime/v1/sessions/{sessionIdOrExternalId}/channels/{channel}/{io}": "named channels" } },
  triggerTask: { calls: ["POST /api/v1/tasks/{taskId}/trigger"], status: "served", tests: ["packages/api/test/sdk-runs.test.ts", "packages/api/test/sdk-debounce.test.ts"] },
  updateDashboard: { calls: ["PATCH /api/v1/query/dashboards/{dashboardId}"], status: "out-of-scope", reason: CLICKHOUSE },
  updateDashboardWidget: { calls: ["PATCH /api/v1/query/dashboards/{dashboardId}/widgets/{widgetId}"], status: "out-of-scope", reason: CLICKHOUSE },
  updateEnvVar: { calls: ["PUT /api/v1/projects/{projectRef}/envvars/{slug}/{key}"], status: "served", tests: ["packages/api/test/envvars.test.ts"], note: "`envvars.update` of SDK 4.8.3 throws before it sends (see above)" },
  updatePromptOverride: { calls: ["PUT /api/v1/prompts/{slug}/override"], status: "out-of-scope", reason: PROMPTS },
  updateRunMetadata: { calls: ["PUT /api/v1/runs/{runId}/metadata"], status: "served", tests: ["packages/api/test/sdk-metadata.test.ts"], note: "Trigger.dev's task runtime flushes `metadata.*` with it; svc's tasks store them without HTTP (packages/worker/test/task-metadata.test.ts)" },
  updateSchedule: { calls: ["PUT /api/v1/schedules/{scheduleId}"], status: "served", tests: ["packages/api/test/sdk-schedules.test.ts"] },
  updateSession: { calls: ["PATCH /api/v1/sessions/{sessionIdOrExternalId}"], status: "served", tests: ["packages/api/test/sdk-sessions.test.ts"] },
  waitForDuration: { calls: ["POST /engine/v1/runs/{runId}/wait/duration"], status: "out-of-scope", reason: ENGINE_V1 },
  waitForWaitpointToken: { calls: ["POST /engine/v1/runs/{runFriendlyId}/waitpoints/tokens/{waitpointFriendlyId}/wait"], status: "out-of-scope", reason: ENGINE_V1 },
};
