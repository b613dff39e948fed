// Server-side engine shared by the worker and the API. Not for task code.
// Exactly what code outside the engine imports (API, worker, queue, runtime tests, bench, scripts);
// a module's other exports stay internal to the engine.

// Errors, time, ids and parsing helpers
export {
  AuthenticationError, ConflictError, IllegalTransitionError, MigrationError, NotFoundError, PermissionError, SvcError, TooLargeError, UnprocessableError, ValidationError,
} from "../errors.ts";
export { FakeClock, systemClock, systemTimers, type Clock, type Timers } from "../clock.ts";
export { newId } from "../ids.ts";
export { MAX_DURATION_MS, isRealCalendarDate, isStorableDate, parseDuration, parseTtl, storableDate } from "../durations.ts";
export { LogThrottle } from "../log-throttle.ts";
export { MAX_JSON_DEPTH, assertStorableJson, jsonNestingExceeds, parseJsonText, tooDeepError } from "./json-text.ts";
export { MicroBatcher } from "./micro-batch.ts";
export { flushWal, prepared, withTransaction, type Pool, type Queryable } from "../db/queryable.ts";

// What the engine needs from its host: dependencies, the dispatcher that wakes workers, NOTIFY channels
export type { EngineDeps } from "./deps.ts";
export { WakeDispatcher, type Dispatcher, type RunJob } from "./dispatch.ts";
export { wakeChannel, wakeWorkers, type ReadyRuns } from "./runs/wake-workers.ts";
export { CHANNELS } from "./channels.ts";

// Tenancy: organizations, projects, environments and branches, users, members, credentials
export { createOrganization, getOrganizationBySlug, slugify, validateSlug } from "./tenancy/organizations.ts";
export { createProject, ensureDefaultProject, ensureOrganization, type ProjectCredentials } from "./tenancy/projects.ts";
export {
  getBranchEnvironment, getEnvironment, getLiveEnvironment, getRootEnvironment, parseEnvironmentSlug, sanitizeBranchName,
  type Environment, type EnvironmentSlug,
} from "./tenancy/environments.ts";
export { archiveBranch, createBranch, listBranches } from "./tenancy/branches.ts";
export { createUser, findUserByEmail, getUserByEmail } from "./tenancy/users.ts";
export {
  addOrganizationMember, addProjectMember, findProjectByRef, findProjectForUser, getProjectByRef, listAllProjects, listProjectsForUser, type ProjectSummary,
} from "./tenancy/members.ts";
export { SecretBox, sha256Hex } from "./tenancy/secret-box.ts";
export { EncryptionKey, encryptionKeyProblem } from "./tenancy/encryption-key.ts";
export { settingsProblems } from "./settings-problems.ts";
export {
  DEFAULT_ROTATION_GRACE_MS, activeSecretKeys, activeSecretKeysWithExpiry, findEnvironmentBySecretKey, findSecretKey, issueSecretKey, listActiveSecretKeys, rotateSecretKey,
} from "./tenancy/secret-keys.ts";
export {
  createPersonalAccessToken, findUserIdByPersonalAccessToken, listPersonalAccessTokens, revokePersonalAccessToken,
} from "./tenancy/personal-access-tokens.ts";
export {
  DASHBOARD_SESSION_LIFETIME_MS, createDashboardSession, deleteDashboardSession, findDashboardSession, type DashboardSession,
} from "./tenancy/dashboard-sessions.ts";
export { JWT_AUDIENCE, JWT_ISSUER, environmentSigningKey, mintEnvironmentToken, signEnvironmentToken } from "./tenancy/public-tokens.ts";

// Runs: the state machine, triggering, reading, listing, cancel and replay, retries, payloads, the tally of runs made and ended
export { FINAL_STATUSES, LEGACY_RUN_STATUSES, RUN_STATUSES, canTransition, isFinal as isFinalRunStatus, isRunStatus, sourcesOf, statusFlags, type RunStatus } from "./runs/statuses.ts";
export { getRun, transitionRun, type RunRow } from "./runs/store.ts";
export { CLAIMED_COLUMNS, RETURN_CLAIMED, SELECT_CLAIMED_WITH_LEDGER, type ClaimedRun } from "./runs/claimed-columns.ts";
export { CLAIM_READY_SQL } from "./runs/transitions/claim-ready.ts";
export { CLAIM_LIMITED_SQL, GATE_QUEUE_LOCKS_SQL, LIMITED_QUEUE_LOCK_SQL, NAMED_LIMITS_LOCK_SQL } from "./runs/transitions/claim-ready.ts";
export { queuesGatedOn } from "./runs/gated-queues.ts";
export { queuesWithLiveRuns, type QueuesWithLiveRuns } from "./runs/queues-with-live-runs.ts";
export { wakeGateWaiters } from "./runs/wake-gate-waiters.ts";
export { gatesOf, type Gate } from "./runs/gates.ts";
export { RATE_MARK_DELAYED_SQL, RATE_NEXT_DUE_SQL } from "./runs/rate-limit-sql.ts";
export { moveRunsOfChangedQueues, runsToMoveSql } from "./runs/changed-queue-runs.ts";
export { CLAIM_FAST_RESUME_SQL, CLAIM_FAST_RESUMES_SQL } from "./runs/transitions/fast-resume.ts";
export { FINISH_EXECUTIONS_SQL, FINISH_TARGETS } from "./runs/transitions/finish.ts";
export { DECLINE_OFFERS_SQL } from "./runs/transitions/offer-decline.ts";
export { triggerRun, triggerRuns, triggerRunInTransaction, triggerRunsInTransaction, needsTransaction } from "./runs/trigger.ts";
export { TriggerGroupCommitter } from "./runs/trigger-group.ts";
export { decodePacket, encodeOutput, loadStoredPacket, type Packet } from "./runs/payloads.ts";
export { parseSuperjson, stringifySuperjson } from "./runs/superjson-text.ts";
export { decideAfterFailure, maxAttemptsOf } from "./runs/retry-policy.ts";
export { attachWaiter, childOutcome, completeBatchIfDone, notifyWaitersOfRun } from "./runs/notify-waiters.ts";
export { INLINE_PACKET_LIMIT, retrieveRun, type RunDetail, type RunScheduleRef } from "./runs/retrieve-run.ts";
export { countRuns, listRuns, type RunListFilters, type RunListRow } from "./runs/list.ts";
export { MAX_RUN_LIST_LANES, RUN_ID_PREFIX } from "./runs/list-statement.ts";
export { waitsOfRuns, type RunWait } from "./runs/waiting-for.ts";
export { cancelRun } from "./runs/cancel.ts";
export { replayRun } from "./runs/replay.ts";
export { runLedger } from "./runs/run-ledger.ts";
export { copyRecordedEntries, REPLAY_LEDGER_EPOCH, REPLAYABLE_FROM_FAILURE, replayRunFromFailure, type ReplayFromFailureResult } from "./runs/replay-from-failure.ts";
export { rescheduleRun, rescheduledTime } from "./runs/reschedule.ts";
export { addRunTags, decideTags, type TagDecision } from "./runs/add-tags.ts";
export { batchResults, runResult, type RunResultRow } from "./runs/run-results.ts";
export { resetIdempotencyKey } from "./runs/reset-idempotency-key.ts";
export { buildRunTrace, runTrace, spanIdOf, traceIdOf, type RunSpan, type RunSpanEvent, type RunTrace } from "./runs/run-trace.ts";
export { NO_RUN_TALLY, type RunTally, type TriggeredBy } from "./runs/run-tally.ts";
export {
  MAX_TIMELINE_ENTRIES, MAX_TIMELINE_LOGS, runTimeline, type AttemptDetail, type ChildDetail, type RunTimeline, type StepDetail, type TimelineEntry, type TimelineLogs, type WaitDetail,
} from "./runs/timeline.ts";
export { attemptAt, placeLogs, timelineRows, type TimelineItem, type TimelineRow } from "./runs/timeline-tree.ts";

// Run logs: what task code logs, stored per run within a cap (docs/run-logs.md)
export {
  boundLine, DEFAULT_RUN_LOG_LIMITS, lineBytes, RUN_LOG_LEVELS, type RunLogLevel, type RunLogLimits, type RunLogLine, type RunLogSource,
} from "./run-logs/limits.ts";
export { appendRunLogs, type AppendedRunLogs, type DroppedEarly } from "./run-logs/append-run-logs.ts";
export { readRunLogs, type RunLog, type RunLogs } from "./run-logs/read-run-logs.ts";

// Realtime run subscriptions: shape reads from a snapshot, the environments API processes watch
export { MAX_TAG_SHAPE_RUNS, readRunShape, transactionsEndedBelow, type RealtimeRunRow, type RunShape, type ShapeRead } from "./realtime/run-shapes.ts";
export { deleteExpiredWatches, deleteWatches, extendWatches, upsertWatch } from "./realtime/watches.ts";

// Waitpoints: the state machine's completion, tokens and their callback URLs
export { getWaitpoint, insertWaitpoint, type WaitpointRow } from "./waitpoints/store.ts";
export { completeWaitpoint, parseResumePayload } from "./waitpoints/complete-waitpoint.ts";
export { callbackHashMatches, callbackUrl } from "./waitpoints/callback-url.ts";
export { createToken, createTokenInTransaction } from "./waitpoints/create-token.ts";
export { completeToken } from "./waitpoints/complete-token.ts";
export { listTokenRows, parseTokenListFilter, type TokenListFilter, type TokenListRow } from "./waitpoints/list-tokens.ts";
export { WAITPOINT_STATUSES, type WaitpointStatus } from "./waitpoints/statuses.ts";
export { runsWaitingOn, type WaitingRun } from "./waitpoints/waiting-runs.ts";

// The idempotent-wait ledger
export { KEYED_EPOCH, NondeterminismError, type LedgerEntry, type LedgerKind } from "../ledger/entries.ts";
export {
  holdClaim, ledgerEntryFromRow, markKeyedEntryUsed, recordStep, registerWait, type LedgerRow, type WaitRegistration,
} from "../ledger/ledger-store.ts";
export { LedgerSession } from "../ledger/replay.ts";
export { ledgerEntriesOf, replayLocally, type LocalReplayEnd, type LocalReplayEvent, type LocalReplayStop } from "../ledger/local-replay.ts";
export { DurableExecution, type CreateToken, type ExecutionEnd, type SuspendedLedger } from "../ledger/durable-execution.ts";
export type { ExecutionTracing } from "../ledger/execution-tracing.ts";
export { BatchItemOutcomeSchema, LedgerRowSchema, parseStored, StepOutcomeSchema, StoredDataError, WaitOutcomeSchema } from "../ledger/outcomes.ts";

// Timers: time-driven transitions, lapsed leases
export { BUILT_IN_DUE_WORK, delayedRuns, fireAllDue, type DueWork } from "./timers/fire-due.ts";
export { dueAt, nextDueTimes } from "./timers/due-times.ts";
export { lapsedLeases } from "./timers/lapsed-leases.ts";

// Bulk actions: cancel or replay many runs, a chunk per transaction in the workers' timer loops
export {
  BULK_ACTION_CHUNK_SIZE, BULK_ACTION_STATUSES, BULK_ACTION_TYPES, MAX_BULK_ACTION_RUN_IDS, abortBulkAction, bulkActionWork, createBulkAction, filtersOf, isFinalBulkActionStatus,
  listBulkActions, processNextChunk, retrieveBulkAction,
  type BulkActionRow, type BulkActionStatus, type BulkActionType, type BulkActionWorkOptions, type BulkRunFailure, type ChunkResult, type NewBulkAction,
} from "./bulk-actions/index.ts";

// Retention: finished runs and what hangs off them, deleted per environment once old enough
export { runRetention, type EnvironmentSweep, type RunRetentionOptions } from "./retention/run-retention.ts";
export {
  DEFAULT_RETENTION_PACE, MAX_RETENTION_BATCH_SIZE, MAX_RETENTION_REST_RATIO, MIN_RETENTION_BATCH_SIZE, realPaceTimer, restAfter, validateRetentionPace,
  type PaceTimer, type RetentionPace,
} from "./retention/pacing.ts";
export type { RetentionCounts } from "./retention/sweep-environment.ts";
export {
  DEFAULT_RUN_RETENTION_DAYS, MAX_RUN_RETENTION_DAYS, listRunRetention, setRunRetention, validateRetentionDays, type EnvironmentRetention,
} from "./retention/settings.ts";

// Queues and workers as operators see them: each queue's runs by state, the live workers of the registry
export { queueOverview, type QueueOverview } from "./queues/queue-overview.ts";
// Queues as the queues API controls them: pause, concurrencyLimit override and reset (issue 34 §4)
export { controlledQueues, listQueues, registerQueues, retrieveQueue, storedQueueName, type QueueRef, type QueueState } from "./queues/queues.ts";
export { notifyQueuesChanged, overrideQueueLimit, resetQueueLimit, setQueuePaused } from "./queues/queue-controls.ts";
export { listLiveWorkers, type LiveWorker } from "./workers/live-workers.ts";
export { oldestQueuedRun, unservedRunCounts, unservedTasks, type UnservedTask } from "./workers/unserved-tasks.ts";
export { enterWorkerVersion, VERSION_CLOCK_MARGIN } from "./workers/worker-versions.ts";
export { taskOverview, type TaskOverview, type TaskRecentRun } from "./tasks/task-overview.ts";

// Schedules
export { listTimezones, upcomingTicks } from "./schedules/cron.ts";
export type { ScheduleRow } from "./schedules/store.ts";
export {
  createSchedule, deleteSchedule, getSchedule, listSchedules, setScheduleActivation, updateSchedule,
} from "./schedules/manage-schedules.ts";
export { syncDeclarativeSchedules } from "./schedules/sync-declarative.ts";
export { dueSchedules, fireSchedule } from "./schedules/fire-due-schedules.ts";
export { presentSchedule } from "./schedules/present.ts";

// Environment variables
export {
  createEnvironmentVariable, deleteEnvironmentVariable, listEnvironmentVariables, loadEnvironmentVariables, retrieveEnvironmentVariable,
  updateEnvironmentVariable, uploadEnvironmentVariables,
} from "./envvars/variables.ts";

// Batches
export { createBatch } from "./batches/create-batch.ts";
export { addBatchItems } from "./batches/batch-items.ts";
export { parseBatchItemLines } from "./batches/ndjson.ts";
export { triggerBatch } from "./batches/trigger-batch.ts";
export { retrieveBatch } from "./batches/retrieve-batch.ts";

// Packets: large payloads and outputs stored beside the run, and their signed URLs
export {
  MAX_PACKET_PATH_LENGTH, PACKET_PATH_PATTERN, PACKET_UPLOAD_URL_SECONDS, assertUploadTokenUsable, getPacket, presignPacketUpload, storePacketUpload, validatePacketPath,
} from "./packets/store.ts";
export { PACKET_DOWNLOAD_URL_SECONDS, packetDownloadUrl, packetForDownloadToken, packetUploadUrl } from "./packets/urls.ts";
export { RUN_PACKET_FIELDS, runPacketUrl, type RunPacketField } from "./packets/run-packet.ts";
export { expiredUploads } from "./packets/expired-uploads.ts";

// Sessions: conversations with `.in`/`.out` channels, and the runs they start
export { findSession, getSession, resolveSessionIds, sessionAddress, sessionStatus, type SessionAddress, type SessionRow } from "./sessions/store.ts";
export { startSession, type StartSessionResult } from "./sessions/start-session.ts";
export { closeSession, endAndContinueInTransaction, endAndContinueSession, updateSession } from "./sessions/manage-session.ts";
export { listSessionRows, parseSessionListFilter, type SessionListFilter } from "./sessions/list-sessions.ts";
export { appendRecord, appendRecords, streamKey, type AppendInput, type AppendResults, type RecordInput, type RunWriter } from "./sessions/append-record.ts";
export {
  CONTROL_HEADER, MAX_RECORDS_PER_READ, drainRecordJson, isControl, lastRecord, readLastRecordPreviews, readRecords, sseRecordJson, trimOut, type RecordHeader, type SessionRecordPreviewRow,
  type SessionRecordRow,
} from "./sessions/records.ts";
export { SessionInArrivals, type ArrivalWatch, type ChannelArrivals } from "./sessions/in-arrivals.ts";
export { CHANNEL_WAIT_OUTPUT_TYPE, SESSION_CLOSED_ERROR, makeChannelWaitpoint, peekChannelRecord, type ChannelWaitInput } from "./sessions/channel-waits.ts";

// Run streams: realtime streams (`streams.pipe/append`) and input streams (`streams.input`) of a run
export {
  MAX_CHUNKS_PER_READ, MAX_STREAM_CHUNK_BYTES, MAX_STREAM_CHUNKS, MAX_STREAMS_PER_RUN, appendStreamChunks, lastStreamSeq, readStreamChunks, streamRecordJson,
  type ChunkInput, type StreamChunkRow, type StreamIo,
} from "./streams/chunks.ts";
export { attachInputWait, createInputStreamWaitpoint, makeInputWaitpoint, type InputChunk } from "./streams/input-waits.ts";

// OpenTelemetry traces (off unless OTEL_EXPORTER_OTLP_ENDPOINT is set)
export { contextOf, spanContextOf, startTracing, traceparentOf, type Tracing } from "../tracing/index.ts";
export { bearerMatches } from "./tenancy/bearer-matches.ts";

// Run metadata (metadata.* in task code, PUT/GET /api/v1/runs/{id}/metadata)
export { MAX_METADATA_BYTES, applyMetadataOperations, collapseMetadataOperations, metadataKeyProblem, type MetadataOperation, type RunMetadata } from "./metadata/operations.ts";
export { METADATA_UPDATABLE_AFTER_FINISH_MS, getRunMetadata, updateRunMetadata, type MetadataChange } from "./metadata/run-metadata-store.ts";

// Named concurrency limits: list, retrieve, override (per key too), pause, reset (issue 34 §4)
export {
  listConcurrencyLimits, retrieveConcurrencyLimit, retrieveConcurrencyLimitKey,
  type ConcurrencyLimitKeyState, type ConcurrencyLimitState,
} from "./concurrency-limits/concurrency-limits.ts";
export {
  keyOverrideExpiresAt, overrideConcurrencyLimit, overrideConcurrencyLimitKey, resetConcurrencyLimit, resetConcurrencyLimitKey, setConcurrencyLimitPaused,
} from "./concurrency-limits/concurrency-limit-controls.ts";
export { registerDeclaredLimits } from "./concurrency-limits/declared-limits.ts";
export { wakeLimitWaiters } from "./concurrency-limits/wake-limit-waiters.ts";
