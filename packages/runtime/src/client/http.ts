// The one place the client talks HTTP: headers, JSON in and out, error mapping and retries.
import type { ResolvedConfig } from "./config.ts";
import { currentRunTraceparent } from "../sdk/run-context-key.ts";
import { ApiConnectionError, ApiError, ApiResponseError, AuthenticationError } from "./errors.ts";
import { decideRetry, type AttemptOutcome } from "./retry.ts";

/** The run-status vocabulary we speak (Trigger.dev's 2025-07-16 API version). */
export const API_VERSION = "2025-07-16";

export type QueryValue = string | number | boolean | undefined;

export interface HttpRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path under the base URL, with its dynamic segments already encoded. */
  path: string;
  /** Undefined values are left out. */
  query?: Record<string, QueryValue>;
  /** Sent as JSON. Leave undefined for no body. */
  body?: unknown;
  /** A non-JSON body (e.g. NDJSON), sent as is. */
  rawBody?: { content: string; contentType: string };
  headers?: Record<string, string>;
  /** Send without the Authorization header (e.g. presigned packet URLs). */
  anonymous?: boolean;
  /** A full URL instead of baseURL + path. */
  url?: string;
  /** "text": return the body as a string instead of parsing JSON. @default "json" */
  responseType?: "json" | "text";
}

/** A server-sent event stream to open (GET): see HttpTransport.openEventStream. */
export interface EventStreamRequest {
  /** Path under the base URL, with its dynamic segments already encoded. */
  path: string;
  headers?: Record<string, string>;
  /** Aborts the request, and reading the body once it is open. */
  signal?: AbortSignal;
}

export interface HttpResponse<T> {
  status: number;
  data: T;
  headers: Headers;
}

/** A URL the server returned (possibly relative, e.g. a presigned packet URL) made absolute. */
export function absoluteUrl(baseURL: string, url: string): string {
  return new URL(url, baseURL.replace(/\/+$/, "") + "/").toString();
}

/** Percent-encodes one path segment (ids, task ids, env var names). */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

/** Trigger.dev's list filters: arrays as comma lists, dates as epoch milliseconds. */
export function listParam(value: string | readonly string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  const list = typeof value === "string" ? [value] : [...value];
  return list.length > 0 ? list.join(",") : undefined;
}

export function timeParam(value: Date | number | string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value instanceof Date) return String(value.getTime());
  return String(value);
}

/**
 * Sends requests with one resolved configuration. A "logical call" (one method call, including
 * its retries) carries one request-idempotency key, so the server can recognise a retried POST.
 */
export class HttpTransport {
  constructor(
    readonly config: ResolvedConfig,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  ) {}

  /** The credential this transport sends, or a clear error when none is configured. */
  requireAccessToken(what: string): string {
    const token = this.config.accessToken;
    if (!token) {
      throw new AuthenticationError(
        undefined,
        `${what}: no credential configured. Set SERVICE_SECRET_KEY, call configure({ secretKey }) or pass one to new ApiClient({ ... }).`,
      );
    }
    return token;
  }

  async request<T>(req: HttpRequest): Promise<HttpResponse<T>> {
    const url = req.url ?? this.#url(req.path, req.query);
    const origin = originOf(url);
    const fetchImpl = this.#fetch();
    const headers = this.#headers(req, "application/json");
    const body = req.rawBody ? req.rawBody.content : req.body === undefined ? undefined : JSON.stringify(req.body);
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await fetchImpl(url, { method: req.method, headers, body });
      } catch (error) {
        const decision = decideRetry(attempt, { kind: "connectionError" }, this.config.requestOptions.retry);
        if (decision.retry) {
          await this.sleep(decision.delayMs);
          continue;
        }
        throw new ApiConnectionError(`Could not reach ${origin}: ${(error as Error).message}`, { cause: error });
      }
      const text = await response.text();
      const parsed = parseJson(text);
      if (response.ok && req.responseType === "text") {
        return { status: response.status, headers: response.headers, data: text as T };
      }
      if (response.ok) {
        if (text.trim() && parsed === NOT_JSON) {
          throw new ApiResponseError(response.status, `${req.method} ${req.path ?? url}: response is not JSON`, text, response.headers);
        }
        return { status: response.status, headers: response.headers, data: (parsed === NOT_JSON ? undefined : parsed) as T };
      }
      const outcome: AttemptOutcome = { kind: "response", status: response.status, headers: response.headers };
      const decision = decideRetry(attempt, outcome, this.config.requestOptions.retry);
      if (decision.retry) {
        await this.sleep(decision.delayMs);
        continue;
      }
      throw errorFromResponse(response, text);
    }
  }

  /**
   * Opens a server-sent event stream (GET) with the same headers as every other request, in one
   * attempt: the subscriber reconnects by itself, with Last-Event-ID, so a retry here would only
   * hide where it is. Resolves with the 2xx response, its body unread. A non-2xx is the mapped
   * ApiError, an unreachable server an ApiConnectionError, a 2xx that is not an event stream an
   * ApiResponseError; an abort through `signal` rejects with the signal's reason.
   */
  async openEventStream(req: EventStreamRequest): Promise<Response> {
    const url = this.#url(req.path, undefined);
    const origin = originOf(url);
    const headers = this.#headers({ method: "GET", path: req.path, ...(req.headers ? { headers: req.headers } : {}) }, "text/event-stream");
    let response: Response;
    try {
      response = await this.#fetch()(url, { method: "GET", headers, ...(req.signal ? { signal: req.signal } : {}) });
    } catch (error) {
      if (req.signal?.aborted) throw req.signal.reason;
      throw new ApiConnectionError(`Could not reach ${origin}: ${(error as Error).message}`, { cause: error });
    }
    if (!response.ok) throw errorFromResponse(response, await response.text().catch(() => ""));
    const type = response.headers.get("content-type") ?? "";
    if (!type.startsWith("text/event-stream")) {
      await response.body?.cancel().catch(() => undefined);
      throw new ApiResponseError(response.status, `GET ${req.path}: response is not an event stream (content-type "${type}")`, undefined, response.headers);
    }
    return response;
  }

  #fetch(): typeof fetch {
    return this.config.requestOptions.fetch ?? globalThis.fetch;
  }

  #url(path: string, query: Record<string, QueryValue> | undefined): string {
    const base = this.config.baseURL.replace(/\/+$/, "");
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) params.append(key, String(value));
    }
    const search = params.toString();
    return `${base}${path}${search ? `?${search}` : ""}`;
  }

  #headers(req: HttpRequest, accept: string): Record<string, string> {
    const own: Record<string, string> = {
      accept,
      "x-trigger-api-version": API_VERSION,
      "x-trigger-request-idempotency-key": crypto.randomUUID(),
    };
    if (req.rawBody) own["content-type"] = req.rawBody.contentType;
    else if (req.body !== undefined) own["content-type"] = "application/json";
    if (!req.anonymous && this.config.accessToken) own.authorization = `Bearer ${this.config.accessToken}`;
    if (!req.anonymous && this.config.previewBranch) {
      // Ours, and the name Trigger.dev servers read; svc gives x-service-branch precedence.
      own["x-service-branch"] = this.config.previewBranch;
      own["x-trigger-branch"] = this.config.previewBranch;
    }
    const extra = this.config.requestOptions.additionalHeaders ?? {};
    const merged: Record<string, string> = {};
    // Inside a run with traces on, what it triggers or completes joins the run's trace (W3C Trace Context).
    const traceparent = currentRunTraceparent();
    if (traceparent) merged.traceparent = traceparent;
    for (const [key, value] of Object.entries({ ...extra, ...req.headers })) merged[key.toLowerCase()] = value;
    return { ...merged, ...own };
  }
}

const NOT_JSON = Symbol("not json");

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    throw new ApiConnectionError(`Invalid URL "${url}": check baseURL / SERVICE_API_URL`);
  }
}

/** The ApiError subclass of a non-2xx response, its message from the JSON body's `error` (or the text). */
function errorFromResponse(response: Response, text: string): ApiError {
  const parsed = parseJson(text);
  return ApiError.generate(response.status, parsed === NOT_JSON ? text : parsed, response.headers, `${response.status} ${response.statusText || "error"}`);
}

function parseJson(text: string): unknown {
  if (!text.trim()) return NOT_JSON;
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}
