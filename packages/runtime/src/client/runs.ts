// Runs: list (GET /api/v1/runs, or /api/v1/projects/{ref}/runs with a PAT), retrieve, cancel, replay.
import superjson from "superjson";
import { absoluteUrl, listParam, segment, timeParam, type HttpTransport } from "./http.ts";
import { CursorPage, pagePromise, reviveDates, type CursorPagination, type PagePromise } from "./pagination.ts";

import { RUN_STATUSES, type RunStatus } from "../engine/runs/statuses.ts";

export { RUN_STATUSES, type RunStatus };

/** Fields of a run in lists and on retrieve. */
export interface RunSummary {
  id: string;
  status: RunStatus;
  taskIdentifier: string;
  /** The idempotency key as you gave it. */
  idempotencyKey?: string;
  version?: string;
  isQueued: boolean;
  isExecuting: boolean;
  isWaiting: boolean;
  isCompleted: boolean;
  isSuccess: boolean;
  isFailed: boolean;
  isCancelled: boolean;
  isTest: boolean;
  createdAt: Date;
  updatedAt: Date;
  startedAt?: Date;
  finishedAt?: Date;
  delayedUntil?: Date;
  expiredAt?: Date;
  ttl?: string;
  tags: string[];
  metadata?: Record<string, unknown>;
  costInCents: number;
  baseCostInCents: number;
  durationMs: number;
  /** List items only: the environment the run belongs to. */
  env?: { id: string; name: string; user?: string };
}

/** A run with its payload, output or error and lineage (GET /api/v3/runs/{id}). */
export interface RetrievedRun<TPayload = any, TOutput = any> extends RunSummary {
  depth: number;
  triggerFunction: "trigger" | "triggerAndWait" | "batchTrigger" | "batchTriggerAndWait";
  batchId?: string;
  payload?: TPayload;
  output?: TOutput;
  error?: { message: string; name?: string; stackTrace?: string };
  schedule?: { id: string; externalId?: string; deduplicationKey?: string; generator: { type: "CRON"; expression: string; description: string } };
  relatedRuns: { root?: RunSummary; parent?: RunSummary; children?: RunSummary[] };
  attemptCount: number;
}

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

const RUN_DATES = ["createdAt", "updatedAt", "startedAt", "finishedAt", "delayedUntil", "expiredAt"] as const;

function reviveRun<T extends RunSummary>(run: T): T {
  const revived = reviveDates(run, RUN_DATES);
  const related = (revived as Partial<RetrievedRun>).relatedRuns;
  if (related) {
    (revived as Partial<RetrievedRun>).relatedRuns = {
      ...(related.root ? { root: reviveDates(related.root, RUN_DATES) } : {}),
      ...(related.parent ? { parent: reviveDates(related.parent, RUN_DATES) } : {}),
      ...(related.children ? { children: related.children.map((c) => reviveDates(c, RUN_DATES)) } : {}),
    };
  }
  return revived;
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
    const http = this.connect();
    const fetchPage = async (cursor: { after?: string; before?: string }): Promise<CursorPage<RunSummary>> => {
      const { after: _a, before: _b, ...rest } = query;
      const { data } = await http.request<{ data: RunSummary[]; pagination?: CursorPagination }>({
        method: "GET",
        path,
        query: runQuery({ ...rest, ...cursor }),
      });
      return new CursorPage((data.data ?? []).map(reviveRun), data.pagination ?? {}, fetchPage);
    };
    return pagePromise(fetchPage({ after: query.after, before: query.before }));
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
    const { data } = await http.request<RetrievedRun & { payloadPresignedUrl?: string; outputPresignedUrl?: string }>({
      method: "GET",
      path: `/api/v3/runs/${segment(runId)}`,
    });
    const { payloadPresignedUrl, outputPresignedUrl, ...run } = data;
    if (run.payload === undefined && payloadPresignedUrl) run.payload = await fetchPresigned(http, payloadPresignedUrl);
    if (run.output === undefined && outputPresignedUrl) run.output = await fetchPresigned(http, outputPresignedUrl);
    const withDefaults = { ...run, relatedRuns: run.relatedRuns ?? {}, attemptCount: run.attemptCount ?? 0 };
    return reviveRun(withDefaults as RetrievedRun<TPayload, TOutput>);
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
