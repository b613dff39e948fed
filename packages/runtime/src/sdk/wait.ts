import { isRealCalendarDate, MAX_DURATION_MS, parseDuration } from "../durations.ts";
import { requireExecution, type CreateTokenOptions, type CreatedToken, type WaitOptions } from "./run-context.ts";
import { toWaitResult, type WaitResult } from "./wait-result.ts";

export type DurationSpec = { seconds?: number; minutes?: number; hours?: number; days?: number; weeks?: number };

function durationMs(spec: DurationSpec): number {
  const ms =
    (spec.seconds ?? 0) * 1000 +
    (spec.minutes ?? 0) * 60_000 +
    (spec.hours ?? 0) * 3_600_000 +
    (spec.days ?? 0) * 86_400_000 +
    (spec.weeks ?? 0) * 604_800_000;
  if (!Number.isFinite(ms) || ms < 0) throw new Error("wait.for(): the duration must be a non-negative number of seconds/minutes/hours/days/weeks");
  return ms;
}

/** A wait.forToken's promise; `.unwrap()` resolves to the output or throws (a WaitpointTimeoutError on timeout), as Trigger.dev's. */
export type WaitPromise<T> = Promise<WaitResult<T>> & { unwrap(): Promise<T> };

/**
 * Waits until the token is completed (or times out). The run is checkpointed meanwhile: it becomes
 * WAITING, gives its worker slot back and costs only database rows until it resumes.
 *
 * @example
 * const token = await wait.createToken({ timeout: "1h" });
 * await step.run("ask", () => sendApprovalEmail(token.url));
 * const result = await wait.forToken<{ approved: boolean }>(token);
 * if (result.ok) console.log(result.output.approved);
 * const approval = await wait.forToken<{ approved: boolean }>(token).unwrap(); // throws on timeout
 */
export function forToken<T = unknown>(token: string | { id: string }, options?: WaitOptions): WaitPromise<T> {
  const promise = (async () => {
    const execution = requireExecution("wait.forToken");
    const id = typeof token === "string" ? token : token?.id;
    if (typeof id !== "string" || !id.startsWith("waitpoint_")) throw new Error(`wait.forToken(): expected a token id ("waitpoint_…") or { id }, got ${JSON.stringify(token)}`);
    return toWaitResult<T>(await execution.waitForToken(id, options));
  })();
  return Object.assign(promise, { unwrap: () => promise.then((result) => result.unwrap()) });
}

/**
 * Sleeps durably: the wake-up time is recorded once, so a resumed run does not sleep again.
 *
 * @example
 * await wait.for({ minutes: 5 });
 */
export async function waitFor(duration: DurationSpec | string, options?: WaitOptions): Promise<void> {
  const execution = requireExecution("wait.for");
  const ms = typeof duration === "string" ? parseDuration(duration) : durationMs(duration);
  if (ms === null) throw new Error(`wait.for(): "${duration}" is not a duration (e.g. "30s", "5m")`);
  if (!(ms <= MAX_DURATION_MS)) throw new Error(`wait.for(): ${JSON.stringify(duration)} is too long (at most ${MAX_DURATION_MS / 86_400_000} days)`);
  const spec = `for:${ms}ms`;
  await execution.waitUntil(null, spec, ms, options);
}

/**
 * Sleeps durably until `date`.
 *
 * @example
 * await wait.until({ date: new Date("2030-01-01T00:00:00Z") });
 */
export async function waitUntil(params: { date: Date | string }, options?: WaitOptions): Promise<void> {
  const execution = requireExecution("wait.until");
  const date = new Date(params.date);
  if (Number.isNaN(date.getTime()) || (typeof params.date === "string" && !isRealCalendarDate(params.date))) {
    throw new Error(`wait.until(): invalid date ${JSON.stringify(params.date)}`);
  }
  await execution.waitUntil(date, `until:${date.toISOString()}`, null, options);
}

/** Inside a run: creates a token once (recorded in the ledger), so a replay waits on the same token. */
export async function createTokenInRun(options: CreateTokenOptions = {}): Promise<CreatedToken> {
  return requireExecution("wait.createToken").createToken(options);
}
