import { DEFAULT_RETRY, type RetryPolicy } from "../engine/runs/retry-policy.ts";
import { logger } from "./logger.ts";
import { requireExecution } from "./run-context.ts";
import { nextRetryDelay, sleepDurably } from "./retry-delay.ts";

/** How to retry a response of some statuses: with backoff, or at the time a rate-limit header names. */
export type FetchRetryStrategy =
  | ({ strategy: "backoff"; bodyFilter?: never } & RetryPolicy)
  | {
      strategy: "headers";
      limitHeader: string;
      remainingHeader: string;
      resetHeader: string;
      /** @default "unix_timestamp_in_ms" */
      resetFormat?: "unix_timestamp" | "unix_timestamp_in_ms" | "iso_8601" | "iso_8601_duration_openai_variant";
      bodyFilter?: never;
    };

export interface FetchRetryOptions {
  /**
   * By status: keys are a status ("429"), a range ("500-599"), a class ("5xx"), "all", or a
   * comma-separated list of those. @default { "429,408,409,5xx": { strategy: "backoff" } }
   */
  byStatus?: Record<string, FetchRetryStrategy>;
  /** When a try takes longer than `timeoutInMs`. @default the task retry defaults */
  timeout?: RetryPolicy;
  /** When the connection fails. @default the task retry defaults */
  connectionError?: RetryPolicy;
}

export interface RetryFetchRequestInit extends RequestInit {
  retry?: FetchRetryOptions;
  /** Abort a try after this long (then retried as `retry.timeout` says). */
  timeoutInMs?: number;
}

/** At most this many tries, whatever the options say (as Trigger.dev). */
const MAX_TRIES = 10;
const DEFAULT_BY_STATUS: Record<string, FetchRetryStrategy> = { "429,408,409,5xx": { strategy: "backoff", ...DEFAULT_RETRY } };

/** A try's outcome as the ledger records it: the response to return, or the pause before the next try, or the error to throw. */
type TryRecord =
  | { kind: "response"; status: number; statusText: string; headers: [string, string][]; body: string | null }
  | { kind: "retry"; delayMs: number; reason: string }
  | { kind: "error"; name: string; message: string };

/**
 * `fetch` with retries (Trigger.dev's `retry.fetch`), durable: each try is a step whose outcome
 * is recorded — the response to return, or the pause before the next try (a durable sleep) — so
 * a replay does not send a request it recorded. The response is rebuilt from its record (status,
 * headers, body): its body is stored in the run's ledger like a step's value, so fetch large
 * downloads in a step of your own that stores them elsewhere. `bodyFilter` is not supported.
 *
 * @example
 * const response = await retry.fetch("https://api.example.com/charge", {
 *   method: "POST",
 *   body: JSON.stringify({ orderId }),
 *   retry: { byStatus: { "500-599": { strategy: "backoff", maxAttempts: 5, minTimeoutInMs: 500 } } },
 *   timeoutInMs: 10_000,
 * });
 */
export async function retryFetch(input: string | URL | Request, init?: RetryFetchRequestInit): Promise<Response> {
  const execution = requireExecution("retry.fetch");
  for (const strategy of Object.values(init?.retry?.byStatus ?? {})) {
    if ((strategy as { bodyFilter?: unknown }).bodyFilter !== undefined) throw new Error("retry.fetch(): `bodyFilter` is not supported by svc; retry by status alone, or check the body yourself");
  }
  const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
  const url = input instanceof Request ? input.url : String(input);
  for (let attempt = 1; ; attempt++) {
    const record = await execution.runStep<TryRecord>(`retry.fetch ${method} ${url} #${attempt}`, () => tryOnce(input, init, attempt, () => execution.now()));
    if (record.kind === "response") return new Response(record.body === null ? null : Buffer.from(record.body, "base64"), { status: record.status, statusText: record.statusText, headers: record.headers });
    if (record.kind === "error") throw Object.assign(new Error(record.message), { name: record.name });
    logger.warn(`retry.fetch: ${method} ${url} try ${attempt} ${record.reason}, trying again in ${record.delayMs} ms`);
    await sleepDurably(execution, record.delayMs);
  }
}

async function tryOnce(input: string | URL | Request, init: RetryFetchRequestInit | undefined, attempt: number, now: () => Date): Promise<TryRecord> {
  const { retry: options, timeoutInMs, ...requestInit } = init ?? {};
  const timeout = new AbortController();
  const timer = timeoutInMs ? setTimeout(() => timeout.abort(), timeoutInMs) : undefined;
  const signal = requestInit.signal ? AbortSignal.any([requestInit.signal, timeout.signal]) : timeout.signal;
  const headers = new Headers(requestInit.headers ?? (input instanceof Request ? input.headers : undefined));
  headers.set("x-retry-count", String(attempt));
  let response: Response;
  try {
    response = await fetch(input, { ...requestInit, headers, signal });
  } catch (error) {
    const failure = error as Error;
    // A try timed out (our timer, not the caller's signal), or could not connect: retried as the options say.
    const timedOut = timeout.signal.aborted && !requestInit.signal?.aborted;
    const connection = failure?.name === "TypeError" && failure.cause instanceof Error;
    if (timedOut || connection) {
      const delay = attempt < MAX_TRIES ? nextRetryDelay(timedOut ? options?.timeout : options?.connectionError, attempt) : undefined;
      if (delay !== undefined) return { kind: "retry", delayMs: delay, reason: timedOut ? `timed out after ${timeoutInMs} ms` : `could not connect (${(failure.cause as Error).message})` };
    }
    return { kind: "error", name: failure?.name ?? "Error", message: failure?.message ?? String(error) };
  } finally {
    clearTimeout(timer);
  }
  const body = response.status === 204 || response.status === 304 ? null : Buffer.from(await response.arrayBuffer()).toString("base64");
  if (!response.ok && attempt < MAX_TRIES) {
    const delay = retryDelayFor(response, options?.byStatus ?? DEFAULT_BY_STATUS, attempt, now());
    if (delay !== undefined) return { kind: "retry", delayMs: delay, reason: `answered ${response.status}` };
  }
  return { kind: "response", status: response.status, statusText: response.statusText, headers: [...response.headers], body };
}

function retryDelayFor(response: Response, byStatus: Record<string, FetchRetryStrategy>, attempt: number, now: Date): number | undefined {
  const strategy = Object.entries(byStatus).find(([range]) => statusInRange(response.status, range))?.[1];
  if (!strategy) return undefined;
  if (strategy.strategy === "backoff") return nextRetryDelay(strategy, attempt);
  const resetAt = resetTime(response.headers.get(strategy.resetHeader), strategy.resetFormat ?? "unix_timestamp_in_ms", now);
  return resetAt === undefined ? undefined : Math.max(0, resetAt - now.getTime());
}

/** Whether `status` is in `range`: "429", "500-599", "5xx", "all", or a comma-separated list of those. */
export function statusInRange(status: number, range: string): boolean {
  const trimmed = range.trim();
  if (trimmed === "all") return true;
  if (trimmed.includes(",")) return trimmed.split(",").some((part) => statusInRange(status, part));
  const span = /^(\d{3})-(\d{3})$/.exec(trimmed);
  if (span) return status >= Number(span[1]) && status <= Number(span[2]);
  const klass = /^(\d)xx$/.exec(trimmed);
  if (klass) return Math.floor(status / 100) === Number(klass[1]);
  return /^\d{3}$/.test(trimmed) && status === Number(trimmed);
}

/** When a rate limit resets, in ms since the epoch, from its header in the given format. */
export function resetTime(value: string | null, format: NonNullable<Extract<FetchRetryStrategy, { strategy: "headers" }>["resetFormat"]>, now: Date): number | undefined {
  if (!value) return undefined;
  switch (format) {
    case "unix_timestamp":
    case "unix_timestamp_in_ms": {
      const n = Number.parseInt(value, 10);
      return Number.isNaN(n) ? undefined : format === "unix_timestamp" ? n * 1000 : n;
    }
    case "iso_8601": {
      const at = Date.parse(value);
      return Number.isNaN(at) ? undefined : at;
    }
    case "iso_8601_duration_openai_variant": {
      // "6m0s", "1h2m", "20ms": a duration from now.
      const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?$/.exec(value);
      if (!m || value === "") return undefined;
      const ms = Number(m[1] ?? 0) * 86_400_000 + Number(m[2] ?? 0) * 3_600_000 + Number(m[3] ?? 0) * 60_000 + Number(m[4] ?? 0) * 1000 + Number(m[5] ?? 0);
      return now.getTime() + ms;
    }
  }
}
