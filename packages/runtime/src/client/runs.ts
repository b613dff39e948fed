// Runs: list (GET /api/v1/runs, or /api/v1/projects/{ref}/runs with a PAT), retrieve, poll, cancel, replay.
import superjson from "superjson";
import { RUN_DATE_FIELDS, RetrieveRunResponse, RunListResponse, type RelatedRun, type RunListItem, type RunObject, type RunWaitingFor } from "../contracts/run-object.ts";
import { isFinal, RUN_STATUSES, type RunStatus } from "../engine/runs/statuses.ts";
import { absoluteUrl, listParam, segment, timeParam, type HttpTransport } from "./http.ts";
import { CursorPage, pagePromise, reviveDates, type PagePromise } from "./pagination.ts";
import { validateResponse } from "./validate-response.ts";

export { RUN_STATUSES, type RunStatus };

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
    const { payloadPresignedUrl, outputPresignedUrl, relatedRuns, waitingFor, ...run } = validateResponse(RetrieveRunResponse, await http.request<unknown>({ method: "GET", path }), `GET ${path}`);
    if (run.payload === undefined && payloadPresignedUrl) run.payload = await fetchPresigned(http, payloadPresignedUrl);
    if (run.output === undefined && outputPresignedUrl) run.output = await fetchPresigned(http, outputPresignedUrl);
    const related: RetrievedRun["relatedRuns"] = {};
    if (relatedRuns.root) related.root = reviveRun(relatedRuns.root);
    if (relatedRuns.parent) related.parent = reviveRun(relatedRuns.parent);
    if (relatedRuns.children) related.children = relatedRuns.children.map(reviveRun);
    return { ...reviveRun(run), relatedRuns: related, waitingFor: reviveWaits(waitingFor) } as RetrievedRun<TPayload, TOutput>;
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
   * Starts a new run with the same task, payload, tags and metadata; returns the new run's id.
   *
   * @example
   * const { id } = await runs.replay("run_abc123");
   */
  async replay(runId: string): Promise<{ id: string }> {
    const { data } = await this.connect().request<{ id: string }>({ method: "POST", path: `/api/v1/runs/${segment(runId)}/replay` });
    return data;
  }
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
