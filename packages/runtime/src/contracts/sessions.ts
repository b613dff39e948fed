import { z } from "zod";
import { storedText } from "./text.ts";
import { commaListPattern, DURATION_SCHEMA, INSTANT_QUERY_SCHEMA, MAX_DURATION_WHOLE_SECONDS } from "./time.ts";

/** The prefix that marks a session's own id; an externalId may not start with it. */
export const SESSION_ID_PREFIX = "session_";

/** Largest body of POST /api/v1/sessions, in bytes. */
export const MAX_SESSION_CREATE_BYTES = 32 * 1024;
/** Largest record appended to a channel, in bytes. */
export const MAX_SESSION_RECORD_BYTES = 1024 * 1024;
export const MAX_SESSION_TAGS = 10;
export const MAX_SESSION_TAG_LENGTH = 128;

/** A session as a path names it: its `session_…` id or its externalId. */
export const SessionRef = storedText(z.string().min(1).max(256));

/** Not blank: a character that String.prototype.trim keeps (spelled out: tools read \s as they like), and no NUL. */
const NON_BLANK_STORED_TEXT = "^[^\\u0000]*[^\\u0000\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff][^\\u0000]*$";

// Trimmed before its length is checked: the document says "not blank" with its pattern.
export const ExternalId = storedText(z.string().trim().min(1).max(256)).meta({ pattern: NON_BLANK_STORED_TEXT }).refine((v) => !v.startsWith(SESSION_ID_PREFIX), {
  message: `must not start with "${SESSION_ID_PREFIX}" (the prefix of session ids)`,
});

const SessionTags = z.array(storedText(z.string().max(MAX_SESSION_TAG_LENGTH))).max(MAX_SESSION_TAGS);
const Metadata = z.record(z.string(), z.unknown());

/** The options every run the session starts is triggered with (Trigger.dev's SessionTriggerConfig). */
export const SessionTriggerConfig = z
  .object({
    /** The run's payload is `{ ...basePayload, sessionId }`. */
    basePayload: Metadata,
    machine: z.string().max(64).optional(),
    queue: storedText(z.string().min(1).max(128)).optional(),
    tags: z.array(storedText(z.string().max(128))).max(10).optional(),
    maxAttempts: z.number().int().positive().max(10).optional(),
    maxDuration: z.number().int().positive().max(2_147_483_647).optional(),
    lockToVersion: z.string().max(128).optional(),
    region: z.string().max(128).optional(),
    idleTimeoutInSeconds: z.number().int().positive().max(3600).optional(),
    ttl: z.union([z.string().max(64).meta(DURATION_SCHEMA), z.number().int().nonnegative().meta({ maximum: MAX_DURATION_WHOLE_SECONDS })]).optional(),
  })
  .passthrough();
export type SessionTriggerConfig = z.infer<typeof SessionTriggerConfig>;

/** Body of POST /api/v1/sessions. */
export const CreateSessionRequestBody = z.object({
  type: storedText(z.string().min(1).max(64)),
  externalId: ExternalId.optional(),
  taskIdentifier: storedText(z.string().min(1).max(128)),
  triggerConfig: SessionTriggerConfig,
  tags: SessionTags.optional(),
  metadata: Metadata.optional(),
  expiresAt: z.coerce.date().optional(),
});
export type CreateSessionRequestBody = z.infer<typeof CreateSessionRequestBody>;

/** Body of PATCH /api/v1/sessions/{session}: `metadata: null` clears it; externalId cannot change. */
export const UpdateSessionRequestBody = z.object({
  tags: SessionTags.optional(),
  metadata: Metadata.nullable().optional(),
  externalId: z.union([z.null(), ExternalId]).optional(),
});
export type UpdateSessionRequestBody = z.infer<typeof UpdateSessionRequestBody>;

/** Body of POST /api/v1/sessions/{session}/close (required: the SDK sends `{}`). */
export const CloseSessionRequestBody = z.object({
  reason: storedText(z.string().max(256)).optional(),
  callingRunId: z.string().max(128).optional(),
});
export type CloseSessionRequestBody = z.infer<typeof CloseSessionRequestBody>;

/** Body of POST /api/v1/sessions/{session}/end-and-continue. */
export const EndAndContinueSessionRequestBody = z.object({
  callingRunId: storedText(z.string().min(1).max(128)),
  reason: storedText(z.string().max(64)),
});
export type EndAndContinueSessionRequestBody = z.infer<typeof EndAndContinueSessionRequestBody>;

export const EndAndContinueSessionResponse = z.object({ runId: z.string(), swapped: z.boolean() });

export const SESSION_STATUSES = ["ACTIVE", "CLOSED", "EXPIRED"] as const;
export const SessionStatus = z.enum(SESSION_STATUSES);
export type SessionStatus = z.infer<typeof SessionStatus>;

/** A session as the API hands it out. Nullable fields are always present. */
export const SessionItem = z.object({
  id: z.string(),
  externalId: z.string().nullable(),
  type: z.string(),
  taskIdentifier: z.string(),
  /** Left out of list items. */
  triggerConfig: SessionTriggerConfig.optional(),
  currentRunId: z.string().nullable().optional(),
  /** Derived: CLOSED when closedAt is set, EXPIRED when expiresAt has passed, else ACTIVE. */
  status: SessionStatus,
  tags: z.array(z.string()),
  metadata: Metadata.nullable(),
  closedAt: z.string().nullable(),
  closedReason: z.string().nullable(),
  expiresAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type SessionItem = z.infer<typeof SessionItem>;

export const CreatedSessionResponse = SessionItem.extend({
  runId: z.string(),
  /** A JWT with `read:sessions:<id>` and `write:sessions:<id>`, valid 1 h. */
  publicAccessToken: z.string(),
  isCached: z.boolean(),
});

/** Filters of GET /api/v1/sessions, as the SDK sends them (comma lists, epoch ms). */
export const ListSessionsFilterQuery = z.object({
  "filter[type]": storedText().optional(),
  "filter[tags]": storedText().optional(),
  "filter[taskIdentifier]": storedText().optional(),
  "filter[externalId]": storedText().optional(),
  "filter[status]": z.string().meta({ pattern: commaListPattern(SESSION_STATUSES), description: `Comma-separated statuses: ${SESSION_STATUSES.join(", ")}` }).optional(),
  "filter[createdAt][period]": z.string().meta({ enum: ["1h", "1d", "7d", "30d"] }).optional(),
  "filter[createdAt][from]": z.string().meta(INSTANT_QUERY_SCHEMA).optional(),
  "filter[createdAt][to]": z.string().meta(INSTANT_QUERY_SCHEMA).optional(),
});
export type ListSessionsFilterQuery = z.infer<typeof ListSessionsFilterQuery>;

export const ListSessionsResponse = z.object({
  data: z.array(SessionItem),
  pagination: z.object({ next: z.string().optional(), previous: z.string().optional() }),
});

export const SessionChannel = z.enum(["in", "out"]);
export type SessionChannel = z.infer<typeof SessionChannel>;

/** A record header: `[name, value]`. Control records carry `["trigger-control", "turn-complete"]`. */
export const RecordHeader = z.tuple([z.string(), z.string()]);

/** GET …/{io}/records: records after `afterEventId`, oldest first. */
export const SessionRecordsResponse = z.object({
  records: z.array(
    z.object({
      data: z.unknown(),
      /** The record's part id (`X-Part-Id`, or one svc made). */
      id: z.string(),
      seqNum: z.number(),
      headers: z.array(RecordHeader).optional(),
    }),
  ),
});

export const AppendRecordResponse = z.object({ ok: z.literal(true), seq: z.number() });
