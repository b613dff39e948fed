// Runs: list (GET /api/v1/runs, or /api/v1/projects/{ref}/runs with a PAT), retrieve, poll, cancel,
// replay, reschedule, tags, and what svc knows of a run: its result, trace and events.
import superjson from "superjson";
import type { z } from "zod";
import { RUN_DATE_FIELDS, RetrieveRunResponse, RunListResponse, type RelatedRun, type RunListItem, type RunObject, type RunWaitingFor } from "../contracts/run-object.ts";
import { RunResult as RunResultSchema } from "../contracts/run-results.ts";
import { RunEventsResponse, RunTraceResponse } from "../contracts/run-trace.ts";
import { AddRunTagsResponse } from "../contracts/runs.ts";
import { RunLedgerResponse } from "../contracts/run-ledger.ts";
import { NotFoundError } from "./errors.ts";
import { serializePayload } from "./packets.ts";
import { isFinal, RUN_STATUSES, type RunStatus } from "../engine/runs/statuses.ts";
import { absoluteUrl, listParam, segment, timeParam, type HttpResponse, type HttpTransport } from "./http.ts";
import { CursorPage, pagePromise, reviveDates, type PagePromise } from "./pagination.ts";
import { validateResponse } from "./validate-response.ts";

export { RUN_STATUSES, type RunStatus };

/** A finished run's result: its output as stored (JSON or SuperJSON text, or a packet path), or its error. */
export type RunResult = z.output<typeof RunResultSchema>;
/** A run's trace: the run's span, its attempts under it, and the steps, waits and runs triggered in each. */
export type RunTrace = z.output<typeof RunTraceResponse>["trace"];
/** One span of a run's trace as an event (times in nanoseconds). */
export type RunEvent = z.output<typeof RunEventsResponse>["events"][number];

/** What a replay changes of the original run (anything left out is copied). */
export interface ReplayOverrides {
  /** The new run's payload (sent as JSON). */
  payload?: unknown;
  /** Start later: a duration ("1h30m") or a date. */
  delay?: string | Date;
  tags?: string | string[];
  metadata?: Record<string, unknown>;
  /** Queue name. */
  queue?: string;
  concurrencyKey?: string;
  /** Not started within this time (a duration, or seconds) → EXPIRED. */
  ttl?: string | number;
  idempotencyKey?: string;
  idempotencyKeyTTL?: string;
  maxAttempts?: number;
  /** Seconds. */
  maxDuration?: number;
  /**
   * svc only. `"failure"`: resume a FAILED, CRASHED, SYSTEM_FAILURE or TIMED_OUT run from where it
   * failed — the new run replays the failed attempt's recorded steps, completed waits and child
   * results on the current code instead of doing them again, and runs the failed step and what
   * follows. A run of another status is refused (UnprocessableEntityError); `payload` cannot be
   * changed with it. See docs/replay-from-failure.md.
   * @default "start"
   */
  from?: "start" | "failure";
}

/** A run object (contracts/run-object.ts) with its ISO date strings as Dates. */
type WithDates<T> = { [K in keyof T]: K extends (typeof RUN_DATE_FIELDS)[number] ? Date : T[K] };

/**
 * A waitpoint a WAITING run waits on (contracts/run-object.ts RunWaitingFor), its times as Dates:
 * a MANUAL token is completed with `waitpoints.completeToken(id, output)`; a DATETIME wait ends at
 * `resumeAt`; a RUN wait when the child run `runId` ends; a BATCH wait when the batch's last run
 * ends; a SESSION wait with the next record on the session's `channel`.
 */
export type RunWaitSummary = WaitWithDates<RunWaitingFor>;
type WaitWithDates<W> = W extends unknown ? { [K in keyof W]: K extends "timeoutAt" | "resumeAt" ? Date : W[K] } : never;

/** Fields of a run in lists and on retrieve. */
export type RunSummary = WithDates<RunObject> & {
  /** List items only: the environment the run belongs to. */
  env?: RunListItem["env"];
  /** List items only (retrieve has it too): what the run waits on, empty unless it is WAITING on a pending waitpoint. */
  waitingFor?: RunWaitSummary[];
};

/** A parent, root or child run in `relatedRuns`. */
export type RelatedRunSummary = WithDates<RelatedRun>;

/** A run with its payload, output or error and lineage (GET /api/v3/runs/{id}). */
export type RetrievedRun<TPayload = any, TOutput = any> = Omit<
  WithDates<RetrieveRunResponse>,
  "payload" | "output" | "payloadPresignedUrl" | "outputPresignedUrl" | "relatedRuns" | "waitingFor"
> & {
  payload?: TPayload;
  output?: TOutput;
  relatedRuns: { root?: RelatedRunSummary; parent?: RelatedRunSummary; children?: RelatedRunSummary[] };
  /** What the run waits on: empty unless it is WAITING on a pending waitpoint. */
  waitingFor: RunWaitSummary[];
};

export interface ListRunsQuery {
  status?: RunStatus | RunStatus[];
  taskIdentifier?: string | string[];
  version?: string | string[];
  /** Runs with any of these tags. */
  tag?: string | string[];
  /** e.g. "1h", "7d". Without period/from/to the server lists the last 7 days. */
  period?: string;
  from?: Date | number;
  to?: Date | number;
  isTest?: boolean;
  batch?: string;
  schedule?: string;
  /** Queue names (`task/<id>` for a task's default queue). */
  queue?: string | string[];
  /** The runs a bulk action touched (its `bulk_…` id): a cancel's runs, a replay's new runs; from any time. */
  bulkAction?: string;
  /** Page size (1–100). @default 25 */
  limit?: number;
  after?: string;
  before?: string;
}

/** With a personal access token: which environments of the project to list. */
export interface ListProjectRunsQuery extends ListRunsQuery {
  /** Environment slugs: "dev", "staging", "prod", "preview". */
  env?: string | string[];
}

function reviveRun<T extends RunObject>(run: T): WithDates<T> {
  return reviveDates(run, RUN_DATE_FIELDS) as unknown as WithDates<T>;
}

function reviveWaits(waits: readonly RunWaitingFor[]): RunWaitSummary[] {
  return waits.map((wait) => reviveDates(wait, ["timeoutAt", "resumeAt"]) as unknown as RunWaitSummary);
}

/** A run list item with its dates (also those of what it waits on) as Dates. */
function reviveListItem(item: RunListItem): RunSummary {
  return { ...reviveRun(item), waitingFor: reviveWaits(item.waitingFor) };
}

function runQuery(query: ListProjectRunsQuery): Record<string, string | number | undefined> {
  return {
    "filter[status]": listParam(query.status),
    "filter[taskIdentifier]": listParam(query.taskIdentifier),
    "filter[version]": listParam(query.version),
    "filter[tag]": listParam(query.tag),
    "filter[createdAt][period]": query.period,
    "filter[createdAt][from]": timeParam(query.from),
    "filter[createdAt][to]": timeParam(query.to),
    "filter[isTest]": query.isTest === undefined ? undefined : String(query.isTest),
    "filter[batch]": query.batch,
    "filter[schedule]": query.schedule,
    "filter[queue]": listParam(query.queue),
    "filter[bulkAction]": query.bulkAction,
    "filter[env]": listParam(query.env),
    "page[size]": query.limit,
    "page[after]": query.after,
    "page[before]": query.before,
  };
}

/** Cursor pages of run list items from `path` (the runs list, a project's, a session's). */
export function listRunPages(http: HttpTransport, path: string, query: ListProjectRunsQuery): PagePromise<CursorPage<RunSummary>, RunSummary> {
  const fetchPage = async (cursor: { after?: string; before?: string }): Promise<CursorPage<RunSummary>> => {
    const { after: _a, before: _b, ...rest } = query;
    const response = await http.request<unknown>({ method: "GET", path, query: runQuery({ ...rest, ...cursor }) });
    const page = validateResponse(RunListResponse, response, `GET ${path}`);
    return new CursorPage<RunSummary>(page.data.map(reviveListItem), page.pagination, fetchPage);
  };
  return pagePromise(fetchPage({ after: query.after, before: query.before }));
}

export class RunsResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * Lists runs, newest first. With a secret key: `list(query)`, the key's environment. With a
   * personal access token: `list(projectRef, { env: "prod", ... })`. Await it for one page or
   * `for await` it for every run across pages.
   *
   * @example
   * for await (const run of runs.list({ status: ["FAILED", "CRASHED"], period: "1d" })) {
   *   console.log(run.id, run.taskIdentifier);
   * }
   * const page = await runs.list("proj_abc", { env: "prod", limit: 10 }); // with a PAT
   */
  list(query?: ListRunsQuery): PagePromise<CursorPage<RunSummary>, RunSummary>;
  list(projectRef: string, query?: ListProjectRunsQuery): PagePromise<CursorPage<RunSummary>, RunSummary>;
  list(first?: string | ListRunsQuery, second?: ListProjectRunsQuery): PagePromise<CursorPage<RunSummary>, RunSummary> {
    const projectRef = typeof first === "string" ? first : undefined;
    const query: ListProjectRunsQuery = (typeof first === "string" ? second : first) ?? {};
    const path = projectRef ? `/api/v1/projects/${segment(projectRef)}/runs` : "/api/v1/runs";
    return listRunPages(this.connect(), path, query);
  }

  /**
   * Retrieves one run with its payload and, once finished, its output or error.
   *
   * @example
   * const run = await runs.retrieve("run_abc123");
   * if (run.status === "COMPLETED") console.log(run.output);
   */
  async retrieve<TPayload = any, TOutput = any>(runId: string): Promise<RetrievedRun<TPayload, TOutput>> {
    const http = this.connect();
    const path = `/api/v3/runs/${segment(runId)}`;
    return retrievedRun<TPayload, TOutput>(http, await http.request<unknown>({ method: "GET", path }), `GET ${path}`);
  }

  /**
   * Retrieves the run every `pollIntervalMs` (1 s) until it has finished (COMPLETED, FAILED,
   * CANCELED, …), and returns it. A WAITING run keeps it polling: pass a `signal` to give up.
   *
   * @example
   * const handle = await tasks.trigger("hello-world", { name: "Ada" });
   * const run = await runs.poll(handle, { pollIntervalMs: 250 });
   * if (run.status === "COMPLETED") console.log(run.output);
   */
  async poll<TPayload = any, TOutput = any>(run: string | { id: string }, options: { pollIntervalMs?: number; signal?: AbortSignal } = {}): Promise<RetrievedRun<TPayload, TOutput>> {
    const runId = typeof run === "string" ? run : run?.id;
    if (typeof runId !== "string" || runId === "") throw new TypeError(`runs.poll(): expected a run id or { id }, got ${JSON.stringify(run)}`);
    const interval = options.pollIntervalMs ?? 1000;
    if (!Number.isFinite(interval) || interval < 0) throw new TypeError(`runs.poll(): pollIntervalMs must be a non-negative number, got ${interval}`);
    for (;;) {
      options.signal?.throwIfAborted();
      const retrieved = await this.retrieve<TPayload, TOutput>(runId);
      if (isFinal(retrieved.status)) return retrieved;
      await sleep(interval, options.signal);
    }
  }

  /**
   * Cancels a run. Canceling a run that already finished changes nothing.
   *
   * @example
   * await runs.cancel("run_abc123");
   */
  async cancel(runId: string): Promise<{ id: string }> {
    const { data } = await this.connect().request<{ id: string }>({ method: "POST", path: `/api/v2/runs/${segment(runId)}/cancel` });
    return data;
  }

  /**
   * Starts a new run with the same task, payload, queue, tags and metadata, whatever the original's
   * status; `overrides` changes any of them. Returns the new run's id.
   *
   * @example
   * const { id } = await runs.replay("run_abc123");
   * const retry = await runs.replay("run_abc123", { payload: { orderId: 7 }, delay: "10m", tags: ["retry"] });
   * // svc: resume a failed run from the step that failed, keeping what it recorded before
   * const resumed = await runs.replay("run_abc123", { from: "failure" });
   */
  async replay(runId: string, overrides?: ReplayOverrides): Promise<{ id: string }> {
    const body = overrides === undefined ? undefined : replayBody(overrides);
    const { data } = await this.connect().request<{ id: string }>({ method: "POST", path: `/api/v1/runs/${segment(runId)}/replay`, ...(body ? { body } : {}) });
    return data;
  }

  /**
   * svc only: the run's ledger as a replay of its current (or last) attempt reads it — recorded
   * steps (with their values as superjson text) and waits, oldest first. What
   * `svc runs replay --local` replays.
   *
   * @example
   * const { entries } = await runs.ledger("run_abc123");
   * for (const e of entries) console.log(e.stepKey, e.kind, e.target, e.resolved);
   */
  async ledger(runId: string): Promise<RunLedgerResponse> {
    const response = await this.connect().request<unknown>({ method: "GET", path: `/api/v1/runs/${segment(runId)}/ledger` });
    return validateResponse(RunLedgerResponse, response, "the run's ledger");
  }

  /**
   * Moves a DELAYED run's start: a new delay from now, or a date (later than now). A run of any
   * other status is refused (BadRequestError). Returns the run as it is now.
   *
   * @example
   * const handle = await tasks.trigger("send-reminder", { userId: 42 }, { delay: "1h" });
   * const run = await runs.reschedule(handle.id, { delay: "2h" });
   * console.log(run.delayedUntil);
   */
  async reschedule<TPayload = any, TOutput = any>(runId: string, options: { delay: string | Date }): Promise<RetrievedRun<TPayload, TOutput>> {
    const http = this.connect();
    const path = `/api/v1/runs/${segment(runId)}/reschedule`;
    const delay = options.delay instanceof Date ? options.delay.toISOString() : options.delay;
    return retrievedRun<TPayload, TOutput>(http, await http.request<unknown>({ method: "POST", path, body: { delay } }), `POST ${path}`);
  }

  /**
   * Adds tags to a run, whatever its status (tags it has are skipped). A run holds at most 10
   * tags of at most 128 characters each: more is refused (UnprocessableEntityError).
   *
   * @example
   * await runs.addTags("run_abc123", ["customer:42", "priority"]);
   */
  async addTags(runId: string, tags: string | string[]): Promise<{ message: string }> {
    const path = `/api/v1/runs/${segment(runId)}/tags`;
    return validateResponse(AddRunTagsResponse, await this.connect().request<unknown>({ method: "POST", path, body: { tags } }), `POST ${path}`);
  }

  /**
   * A finished run's result: `{ ok: true, output, outputType }` (the output as stored, JSON or
   * SuperJSON text) or `{ ok: false, error }`. Undefined while the run has not finished (and for
   * a run that does not exist). `retrieve` gives the output decoded.
   *
   * @example
   * const result = await runs.result("run_abc123");
   * if (result && !result.ok) console.log(result.error);
   */
  async result(runId: string): Promise<RunResult | undefined> {
    const path = `/api/v1/runs/${segment(runId)}/result`;
    try {
      return validateResponse(RunResultSchema, await this.connect().request<unknown>({ method: "GET", path }), `GET ${path}`);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  /**
   * A run's trace, built from what svc records of it: the run's span, its attempts under it, and
   * under each attempt the steps, waits and runs triggered in it (durations in nanoseconds).
   *
   * @example
   * const trace = await runs.trace("run_abc123");
   * for (const attempt of trace.rootSpan.children) console.log(attempt.data.message, attempt.data.isError);
   */
  async trace(runId: string): Promise<RunTrace> {
    const path = `/api/v1/runs/${segment(runId)}/trace`;
    return validateResponse(RunTraceResponse, await this.connect().request<unknown>({ method: "GET", path }), `GET ${path}`).trace;
  }

  /**
   * The spans of a run's trace as a flat list of events, by start time.
   *
   * @example
   * for (const event of await runs.events("run_abc123")) console.log(event.message, event.isError);
   */
  async events(runId: string): Promise<RunEvent[]> {
    const path = `/api/v1/runs/${segment(runId)}/events`;
    return validateResponse(RunEventsResponse, await this.connect().request<unknown>({ method: "GET", path }), `GET ${path}`).events;
  }
}

/** The body of a replay with overrides: the payload as JSON text, a Date as ISO text, undefined fields left out. */
function replayBody(overrides: ReplayOverrides): Record<string, unknown> {
  const { payload, delay, ...rest } = overrides;
  const body: Record<string, unknown> = { ...rest };
  if (payload !== undefined) Object.assign(body, serializePayload(payload));
  if (delay !== undefined) body.delay = delay instanceof Date ? delay.toISOString() : delay;
  for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
  return body;
}

/** A retrieve-shaped answer (retrieve, reschedule) with its large packets fetched and its dates revived. */
async function retrievedRun<TPayload, TOutput>(http: HttpTransport, response: HttpResponse<unknown>, what: string): Promise<RetrievedRun<TPayload, TOutput>> {
  const { payloadPresignedUrl, outputPresignedUrl, relatedRuns, waitingFor, ...run } = validateResponse(RetrieveRunResponse, response, what);
  if (run.payload === undefined && payloadPresignedUrl) run.payload = await fetchPresigned(http, payloadPresignedUrl);
  if (run.output === undefined && outputPresignedUrl) run.output = await fetchPresigned(http, outputPresignedUrl);
  const related: RetrievedRun["relatedRuns"] = {};
  if (relatedRuns.root) related.root = reviveRun(relatedRuns.root);
  if (relatedRuns.parent) related.parent = reviveRun(relatedRuns.parent);
  if (relatedRuns.children) related.children = relatedRuns.children.map(reviveRun);
  return { ...reviveRun(run), relatedRuns: related, waitingFor: reviveWaits(waitingFor) } as RetrievedRun<TPayload, TOutput>;
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first (no node: import: the client runs on edge runtimes too). */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A large payload or output stored as a packet, read back according to its content type. */
async function fetchPresigned(http: HttpTransport, url: string): Promise<unknown> {
  const { data, headers } = await http.request<string>({
    method: "GET",
    path: "",
    url: absoluteUrl(http.config.baseURL, url),
    anonymous: true,
    responseType: "text",
  });
  const type = headers.get("content-type") ?? "application/json";
  if (type.startsWith("application/super+json")) return superjson.parse(data);
  if (type.startsWith("text/plain")) return data;
  return data.trim() ? JSON.parse(data) : undefined;
}
