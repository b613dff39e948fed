// Sessions: /api/v1/sessions[/{session}[/close|/end-and-continue|/runs]] and the session's channels
// (/realtime/v1/sessions/{session}/{in|out}…, in session-channels.ts). `{session}` is the
// session's id (`session_…`) or its externalId.
import {
  CreatedSessionResponse,
  EndAndContinueSessionResponse,
  ListSessionsResponse,
  SessionItem,
  type SessionChannel,
  type SessionStatus,
  type SessionTriggerConfig,
} from "../contracts/sessions.ts";
import { listParam, segment, timeParam, type HttpTransport } from "./http.ts";
import { CursorPage, pagePromise, reviveDates, type PagePromise } from "./pagination.ts";
import { listRunPages, type ListRunsQuery, type RunSummary } from "./runs.ts";
import {
  appendRecord,
  readRecords,
  subscribeRecords,
  type AppendedRecord,
  type AppendRecordOptions,
  type ReadRecordsOptions,
  type SessionRecord,
  type SubscribeOptions,
} from "./session-channels.ts";
import { validateResponse } from "./validate-response.ts";

export type { SessionStatus, SessionTriggerConfig };

const SESSION_DATE_FIELDS = ["closedAt", "expiresAt", "createdAt", "updatedAt"] as const;

/** A session (contracts/sessions.ts) with its ISO date strings as Dates. */
export type SessionObject = {
  [K in keyof SessionItem]: K extends (typeof SESSION_DATE_FIELDS)[number] ? (null extends SessionItem[K] ? Date | null : Date) : SessionItem[K];
};

/** A started session, its first (or current) run and a token for the browser. */
export type CreatedSession = SessionObject & {
  runId: string;
  /** A JWT with `read:sessions:<ref>` and `write:sessions:<ref>` (its externalId, else its id), valid 1 h. */
  publicAccessToken: string;
  /** An open session with this externalId already existed: it is returned (its triggerConfig replaced). */
  isCached: boolean;
};

export interface StartSessionOptions {
  /** What kind of session this is, e.g. "chat.agent" (1–64 characters). */
  type: string;
  /**
   * Your own name for the session (1–256 characters, not starting with "session_"), usable
   * wherever its id is. Starting again with the externalId of an open session returns that
   * session (`isCached: true`); of a closed or expired one, a ConflictError.
   * @default none
   */
  externalId?: string;
  /** The task each run of the session runs. */
  taskIdentifier: string;
  /** What each run is triggered with; its payload is `{ ...basePayload, sessionId }`. */
  triggerConfig: SessionTriggerConfig;
  /** Up to 10 tags, usable as list filters. @default [] */
  tags?: string[];
  /** @default null */
  metadata?: Record<string, unknown>;
  /** When the session becomes EXPIRED. @default never */
  expiresAt?: Date | string;
}

export interface UpdateSessionOptions {
  /** Replaces the tags. @default unchanged */
  tags?: string[];
  /** Replaces the metadata; `null` clears it. @default unchanged */
  metadata?: Record<string, unknown> | null;
}

export interface CloseSessionOptions {
  /** Kept as `closedReason` (≤ 256 characters). @default none */
  reason?: string;
}

export interface EndAndContinueOptions {
  /** The run handing over (the session's current run). */
  callingRunId: string;
  /** Why (≤ 64 characters), e.g. "upgrade". */
  reason: string;
}

export interface ListSessionsFilter {
  type?: string | string[];
  /** Sessions with any of these tags (sent as `filter[tags]`). */
  tag?: string | string[];
  taskIdentifier?: string | string[];
  externalId?: string;
  status?: SessionStatus | SessionStatus[];
  /** "1h", "1d", "7d" or "30d": created within this long before now. */
  period?: string;
  from?: Date | number;
  to?: Date | number;
  /** Page size (1–100). @default 20 */
  limit?: number;
  after?: string;
  before?: string;
}

function reviveSession<T extends SessionItem>(session: T): Omit<T, keyof SessionItem> & SessionObject {
  return reviveDates(session, SESSION_DATE_FIELDS) as unknown as Omit<T, keyof SessionItem> & SessionObject;
}

function sessionPath(ref: string): string {
  return `/api/v1/sessions/${segment(ref)}`;
}

export class SessionsResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * Starts a session and its first run (secret key, or a public token that may write the task).
   *
   * @example
   * const session = await sessions.start({
   *   type: "chat.agent", externalId: "chat-42", taskIdentifier: "chat-agent",
   *   triggerConfig: { basePayload: { userId: "u1" } },
   * });
   * // hand session.publicAccessToken to the browser
   */
  async start(options: StartSessionOptions): Promise<CreatedSession> {
    const path = "/api/v1/sessions";
    const response = await this.connect().request<unknown>({ method: "POST", path, body: options });
    return reviveSession(validateResponse(CreatedSessionResponse, response, `POST ${path}`));
  }

  /**
   * Reads a session by its id or externalId, with its triggerConfig and currentRunId.
   *
   * @example
   * const session = await sessions.retrieve("chat-42");
   * if (session.status === "CLOSED") console.log(session.closedReason);
   */
  async retrieve(ref: string): Promise<SessionObject> {
    const path = sessionPath(ref);
    return reviveSession(validateResponse(SessionItem, await this.connect().request<unknown>({ method: "GET", path }), `GET ${path}`));
  }

  /**
   * Replaces a session's tags and/or metadata (secret key).
   *
   * @example
   * await sessions.update("chat-42", { metadata: { title: "Trip to Lisbon" } });
   */
  async update(ref: string, options: UpdateSessionOptions): Promise<SessionObject> {
    const path = sessionPath(ref);
    const response = await this.connect().request<unknown>({ method: "PATCH", path, body: options });
    return reviveSession(validateResponse(SessionItem, response, `PATCH ${path}`));
  }

  /**
   * Closes a session (secret key): its channels refuse appends from then on, and it stays
   * readable. Closing a closed session changes nothing.
   *
   * @example
   * await sessions.close("chat-42", { reason: "user left" });
   */
  async close(ref: string, options: CloseSessionOptions = {}): Promise<SessionObject> {
    const path = `${sessionPath(ref)}/close`;
    const body = options.reason === undefined ? {} : { reason: options.reason };
    const response = await this.connect().request<unknown>({ method: "POST", path, body });
    return reviveSession(validateResponse(SessionItem, response, `POST ${path}`));
  }

  /**
   * Lists sessions, newest first (items leave out triggerConfig). Await for one page, or
   * `for await` for every session across pages.
   *
   * @example
   * for await (const session of sessions.list({ type: "chat.agent", status: "ACTIVE" })) console.log(session.id);
   */
  list(filter: ListSessionsFilter = {}): PagePromise<CursorPage<SessionObject>, SessionObject> {
    const http = this.connect();
    const path = "/api/v1/sessions";
    const fetchPage = async (cursor: { after?: string; before?: string }): Promise<CursorPage<SessionObject>> => {
      const response = await http.request<unknown>({
        method: "GET",
        path,
        query: {
          "filter[type]": listParam(filter.type),
          "filter[tags]": listParam(filter.tag),
          "filter[taskIdentifier]": listParam(filter.taskIdentifier),
          "filter[externalId]": filter.externalId,
          "filter[status]": listParam(filter.status),
          "filter[createdAt][period]": filter.period,
          "filter[createdAt][from]": timeParam(filter.from),
          "filter[createdAt][to]": timeParam(filter.to),
          "page[size]": filter.limit,
          "page[after]": cursor.after,
          "page[before]": cursor.before,
        },
      });
      const page = validateResponse(ListSessionsResponse, response, `GET ${path}`);
      return new CursorPage<SessionObject>(page.data.map(reviveSession), page.pagination, fetchPage);
    };
    return pagePromise(fetchPage({ after: filter.after, before: filter.before }));
  }

  /**
   * Hands the session over from the calling run to a new run of its task (payload with
   * `previousRunId` and `continuation: true`). When another run already took over and is alive,
   * nothing starts and `swapped` is false.
   *
   * @example
   * const { runId, swapped } = await sessions.endAndContinue("chat-42", { callingRunId: ctx.run.id, reason: "upgrade" });
   */
  async endAndContinue(ref: string, options: EndAndContinueOptions): Promise<{ runId: string; swapped: boolean }> {
    const path = `${sessionPath(ref)}/end-and-continue`;
    const body = { callingRunId: options.callingRunId, reason: options.reason };
    const response = await this.connect().request<unknown>({ method: "POST", path, body });
    return validateResponse(EndAndContinueSessionResponse, response, `POST ${path}`);
  }

  /**
   * The runs the session started, newest first, as `runs.list` returns them (with its filters).
   *
   * @example
   * for await (const run of sessions.listRuns("chat-42", { status: "FAILED" })) console.log(run.id);
   */
  listRuns(ref: string, query: ListRunsQuery = {}): PagePromise<CursorPage<RunSummary>, RunSummary> {
    return listRunPages(this.connect(), `${sessionPath(ref)}/runs`, query);
  }

  /**
   * Appends a record to a channel: a string is sent as it is, anything else as JSON. The record
   * is stored as the JSON string of that text (read it back with `parseRecordData`). Retries of
   * the call reuse one part id, so the record is stored once. `.out` needs a secret key; an
   * `.in` record starts a run when the session has none alive.
   *
   * @example
   * const { seq } = await sessions.append("chat-42", "in", { text: "hello" });
   */
  append(ref: string, io: SessionChannel, value: unknown, options: AppendRecordOptions = {}): Promise<AppendedRecord> {
    return appendRecord(this.connect(), ref, io, value, options);
  }

  /**
   * The records of a channel after `afterEventId`, oldest first, at once (at most 1000: ask again
   * after the last one's `seq` for more).
   *
   * @example
   * const records = await sessions.records("chat-42", "out", { afterEventId: lastSeq });
   */
  records(ref: string, io: SessionChannel, options: ReadRecordsOptions = {}): Promise<SessionRecord[]> {
    return readRecords(this.connect(), ref, io, options);
  }

  /**
   * The records of a channel as they land (SSE), from the first one or after `lastEventId`. It
   * reconnects by itself when the server ends a long poll or the connection drops, never
   * repeating or skipping a record, until `signal` aborts or the loop is left. A 4xx other than
   * 408/429 ends the loop with its ApiError. Subscribing by externalId before the session exists
   * is allowed.
   *
   * @example
   * for await (const record of sessions.subscribe("chat-42", "out", { signal })) {
   *   if (controlSubtype(record) === "turn-complete") break;
   *   render(parseRecordData(record.data));
   * }
   */
  subscribe(ref: string, io: SessionChannel, options: SubscribeOptions = {}): AsyncIterable<SessionRecord> {
    return subscribeRecords(this.connect(), ref, io, options);
  }
}
