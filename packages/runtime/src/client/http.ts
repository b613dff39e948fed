// The one place the client talks HTTP: headers, JSON in and out, error mapping and retries.
import type { ResolvedConfig } from "./config.ts";
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
    let origin: string;
    try {
      origin = new URL(url).origin;
    } catch {
      throw new ApiConnectionError(`Invalid URL "${url}": check baseURL / SERVICE_API_URL`);
    }
    const fetchImpl = this.config.requestOptions.fetch ?? globalThis.fetch;
    const headers = this.#headers(req);
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
      const errorBody = parsed === NOT_JSON ? text : parsed;
      throw ApiError.generate(response.status, errorBody, response.headers, `${response.status} ${response.statusText || "error"}`);
    }
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

  #headers(req: HttpRequest): Record<string, string> {
    const own: Record<string, string> = {
      accept: "application/json",
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
    for (const [key, value] of Object.entries({ ...extra, ...req.headers })) merged[key.toLowerCase()] = value;
    return { ...merged, ...own };
  }
}

const NOT_JSON = Symbol("not json");

function parseJson(text: string): unknown {
  if (!text.trim()) return NOT_JSON;
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}
