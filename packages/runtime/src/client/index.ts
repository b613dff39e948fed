// The management client: what backends (and task code) use to call svc's HTTP API.
export { configure, withAuth, auth, runs, batches, idempotencyKeys, envvars, queues, concurrencyLimits, tasksClient, waitClient, schedulesClient, sessionsClient, streamsClient, currentApiClient } from "./global.ts";
export { ApiClient, type CreatePublicTokenOptions, type CreateTriggerTokenOptions } from "./api-client.ts";
export type { ClientConfig, RequestOptions, RetryOptions, ResolvedConfig } from "./config.ts";
export {
  ApiError,
  ApiConnectionError,
  ApiResponseError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
} from "./errors.ts";
export { CursorPage, OffsetPage, type PagePromise } from "./pagination.ts";
export { flattenScopes, type PublicTokenScopes, type ScopeTarget, type ScopeTargets, type Expiration } from "./public-tokens.ts";
export type { TriggerOptions, RunHandle, BatchItem, BatchTaskItem, BatchHandle, BatchTriggerOptions, TransactionClient } from "./tasks.ts";
export type {
  RunStatus, RunSummary, RunWaitSummary, RelatedRunSummary, RetrievedRun, ListRunsQuery, ListProjectRunsQuery, ReplayOverrides, RunResult, RunTrace, RunEvent,
} from "./runs.ts";
export type { BatchObject, BatchResults } from "./batches.ts";
export type { EnvironmentSlug, EnvironmentVariable, UploadEnvironmentVariables, CreateEnvironmentVariable } from "./envvars.ts";
export type { ScheduleObject, CreateScheduleOptions, UpdateScheduleOptions, ListSchedulesOptions } from "./schedules.ts";
export type { QueueObject, QueueReference, ListQueuesOptions } from "./queues.ts";
export type { ConcurrencyLimitObject, ConcurrencyLimitKeyObject, ConcurrencyLimitBound, OverrideBounds, OverrideKey } from "./concurrency-limits.ts";
export type {
  CreateTokenOptions as CreateWaitpointTokenOptions,
  CreatedToken as CreatedWaitpointToken,
  WaitpointTokenItem,
  WaitpointTokenStatus,
  RetrievedToken as RetrievedWaitpointToken,
  ListTokensFilter,
} from "./waitpoints.ts";
export type {
  SessionObject,
  SessionStatus,
  SessionTriggerConfig,
  CreatedSession,
  StartSessionOptions,
  UpdateSessionOptions,
  CloseSessionOptions,
  EndAndContinueOptions,
  ListSessionsFilter,
} from "./sessions.ts";
export {
  parseRecordData,
  controlSubtype,
  type SessionChannel,
  type SessionRecord,
  type SessionRecordHeader,
  type AppendRecordOptions,
  type AppendedRecord,
  type ReadRecordsOptions,
  type SubscribeOptions as SessionSubscribeOptions,
} from "./session-channels.ts";
export { StreamsResource, type ReadStreamOptions } from "./streams.ts";
