// Waitpoint tokens from a backend: create, complete, retrieve, list (/api/v1/waitpoints/tokens…).
// Waiting on a token (wait.forToken) happens inside a run and lives in the in-run SDK, not here.
import superjson from "superjson";
import { listParam, segment, timeParam, type HttpTransport } from "./http.ts";
import { CursorPage, pagePromise, reviveDates, type CursorPagination, type PagePromise } from "./pagination.ts";
import { publicTokenFromResponse } from "./public-tokens.ts";

export type WaitpointTokenStatus = "WAITING" | "COMPLETED" | "TIMED_OUT";

export interface CreateTokenOptions {
  /** How long the token may wait: a duration ("10m", "1h", "2d") or a date. @default "10m" */
  timeout?: string | Date;
  /** Reusing a key within its TTL returns the same token with `isCached: true`. */
  idempotencyKey?: string;
  /** Lifetime of the idempotency key. @default "1h" */
  idempotencyKeyTTL?: string;
  /** Up to 10 tags, usable as list filters. */
  tags?: string | string[];
}

export interface CreatedToken {
  id: string;
  /** POST any JSON here (no auth header needed) to complete the token with that body as output. */
  url: string;
  isCached: boolean;
  /** A public token that can complete this token and nothing else. */
  publicAccessToken?: string;
}

export interface WaitpointTokenItem {
  id: string;
  url: string;
  status: WaitpointTokenStatus;
  completedAt?: Date;
  timeoutAt?: Date;
  idempotencyKey?: string;
  idempotencyKeyExpiresAt?: Date;
  tags: string[];
  createdAt: Date;
}

export interface RetrievedToken<TOutput = any> extends WaitpointTokenItem {
  output?: TOutput;
  /** Set when the token timed out. */
  error?: Error;
}

export interface ListTokensFilter {
  status?: WaitpointTokenStatus | WaitpointTokenStatus[];
  idempotencyKey?: string;
  tags?: string | string[];
  /** "1h", "1d", "7d" or "30d". */
  period?: string;
  from?: Date | number;
  to?: Date | number;
  /** Page size (1–100). @default 25 */
  limit?: number;
  after?: string;
  before?: string;
}

const TOKEN_DATES = ["completedAt", "timeoutAt", "idempotencyKeyExpiresAt", "createdAt"] as const;

/** 24 hours: how long the publicAccessToken of a token stays valid when we sign it ourselves. */
const TOKEN_PUBLIC_ACCESS_LIFETIME = "24h";

type RawToken = WaitpointTokenItem & { output?: unknown; outputType?: string; outputIsError?: boolean; error?: unknown };

/** Reads a stored output back: the wire carries it as serialized text tagged with outputType. */
export function parseTokenOutput(output: unknown, outputType: string | undefined): unknown {
  if (typeof output !== "string") return output;
  if (outputType === "text/plain") return output;
  try {
    return outputType === "application/super+json" ? superjson.parse(output) : JSON.parse(output);
  } catch {
    return output;
  }
}

function presentToken(raw: RawToken): RetrievedToken {
  const { output, outputType, outputIsError, error, ...rest } = raw;
  const token: RetrievedToken = reviveDates(rest, TOKEN_DATES);
  const value = parseTokenOutput(output, outputType);
  if (outputIsError) {
    const message = typeof value === "object" && value !== null && "message" in value ? String((value as { message: unknown }).message) : "Waitpoint timed out";
    token.error = Object.assign(new Error(message), { name: "WaitpointTimeoutError" });
  } else if (error !== undefined && error !== null) {
    const message = typeof error === "object" && "message" in error ? String((error as { message: unknown }).message) : String(error);
    token.error = Object.assign(new Error(message), { name: (error as { name?: string }).name ?? "WaitpointTimeoutError" });
  } else if (value !== undefined) {
    token.output = value;
  }
  return token;
}

function tokenId(token: string | { id: string }): string {
  return typeof token === "string" ? token : token.id;
}

export class WaitpointsResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * Creates a waitpoint token that a run can wait on with `wait.forToken`.
   *
   * @example
   * const token = await wait.createToken({ timeout: "1h", tags: ["approval:42"] });
   * await sendApprovalEmail({ approveUrl: token.url });
   */
  async createToken(options: CreateTokenOptions = {}): Promise<CreatedToken> {
    const http = this.connect();
    const body: Record<string, unknown> = {};
    if (options.timeout !== undefined) body.timeout = options.timeout instanceof Date ? options.timeout.toISOString() : options.timeout;
    if (options.idempotencyKey !== undefined) body.idempotencyKey = options.idempotencyKey;
    if (options.idempotencyKeyTTL !== undefined) body.idempotencyKeyTTL = options.idempotencyKeyTTL;
    if (options.tags !== undefined) body.tags = options.tags;
    const { data, headers } = await http.request<{ id: string; url: string; isCached: boolean }>({
      method: "POST",
      path: "/api/v1/waitpoints/tokens",
      body,
    });
    const publicAccessToken = await publicTokenFromResponse(headers, http.config.accessToken, [`write:waitpoints:${data.id}`], TOKEN_PUBLIC_ACCESS_LIFETIME);
    return { id: data.id, url: data.url, isCached: data.isCached ?? false, ...(publicAccessToken ? { publicAccessToken } : {}) };
  }

  /**
   * Completes a token; runs waiting on it resume with `output`. The first completion wins; later
   * ones succeed without changing anything.
   *
   * @example
   * await wait.completeToken(tokenId, { approved: true, by: "ada@example.com" });
   */
  async completeToken<TOutput = unknown>(token: string | { id: string }, output?: TOutput): Promise<{ success: true }> {
    // `{ data }` is what Trigger.dev servers read; svc accepts it as well as `{ output }`.
    const body = output === undefined ? {} : { data: output };
    const { data } = await this.connect().request<{ success: true }>({
      method: "POST",
      path: `/api/v1/waitpoints/tokens/${segment(tokenId(token))}/complete`,
      body,
    });
    return data;
  }

  /**
   * Reads a token, with its output once completed (or `error` once timed out).
   *
   * @example
   * const token = await wait.retrieveToken("waitpoint_abc");
   * if (token.status === "COMPLETED") console.log(token.output);
   */
  async retrieveToken<TOutput = any>(token: string | { id: string }): Promise<RetrievedToken<TOutput>> {
    const { data } = await this.connect().request<RawToken>({ method: "GET", path: `/api/v1/waitpoints/tokens/${segment(tokenId(token))}` });
    return presentToken(data) as RetrievedToken<TOutput>;
  }

  /**
   * Lists tokens, newest first (items never carry output). Await for one page, or `for await`
   * for every token across pages.
   *
   * @example
   * for await (const token of wait.listTokens({ status: "WAITING", tags: "approval:42" })) console.log(token.id);
   */
  listTokens(filter: ListTokensFilter = {}): PagePromise<CursorPage<WaitpointTokenItem>, WaitpointTokenItem> {
    const http = this.connect();
    const fetchPage = async (cursor: { after?: string; before?: string }): Promise<CursorPage<WaitpointTokenItem>> => {
      const { data } = await http.request<{ data: WaitpointTokenItem[]; pagination?: CursorPagination }>({
        method: "GET",
        path: "/api/v1/waitpoints/tokens",
        query: {
          "filter[status]": listParam(filter.status),
          "filter[idempotencyKey]": filter.idempotencyKey,
          "filter[tags]": listParam(filter.tags),
          "filter[createdAt][period]": filter.period,
          "filter[createdAt][from]": timeParam(filter.from),
          "filter[createdAt][to]": timeParam(filter.to),
          "page[size]": filter.limit,
          "page[after]": cursor.after,
          "page[before]": cursor.before,
        },
      });
      return new CursorPage((data.data ?? []).map((item) => reviveDates(item, TOKEN_DATES)), data.pagination ?? {}, fetchPage);
    };
    return pagePromise(fetchPage({ after: filter.after, before: filter.before }));
  }
}
