import { DEFAULT_RETRY, type RetryPolicy } from "../engine/runs/retry-policy.ts";
import { logger } from "./logger.ts";
import { requireExecution } from "./run-context.ts";
import { nextRetryDelay, sleepDurably } from "./retry-delay.ts";
import { retryFetch } from "./retry-fetch.ts";
import { runInsideStep } from "./step-scope.ts";

/** A failed try as the ledger keeps it. */
interface RecordedError {
  name: string;
  message: string;
  stack?: string;
}
type TryOutcome<T> = { ok: true; value: T } | { ok: false; error: RecordedError };

function recorded(error: unknown): RecordedError {
  if (error instanceof Error) return { name: error.name, message: error.message, ...(error.stack ? { stack: error.stack } : {}) };
  return { name: "Error", message: typeof error === "string" ? error : JSON.stringify(error) ?? String(error) };
}

function rebuilt(error: RecordedError): Error {
  const rebuiltError = new Error(error.message);
  rebuiltError.name = error.name;
  if (error.stack) rebuiltError.stack = error.stack;
  return rebuiltError;
}

/**
 * Retries `fn` when it throws, with backoff between tries (Trigger.dev's `retry.onThrow`),
 * durably: each try is a step whose outcome — its value, or its error — is recorded, and the
 * pause between tries is a durable sleep (a checkpoint, as Trigger.dev's is). A replay returns
 * the recorded value, or passes the recorded failures and sleeps, without calling `fn` again for
 * them. An AbortTaskRunError is not retried (and not recorded). After the last try the error is
 * thrown again — rebuilt from its record (name, message, stack) when the try was an earlier
 * execution's. `fn` may not make durable calls itself; its result must be serialisable, as a step's.
 *
 * @example
 * const rates = await retry.onThrow(async ({ attempt }) => fetchRates({ attempt }), { maxAttempts: 5, minTimeoutInMs: 500 });
 */
async function onThrow<T>(fn: (options: { attempt: number; maxAttempts: number }) => Promise<T>, options: RetryPolicy = {}): Promise<T> {
  const execution = requireExecution("retry.onThrow");
  const maxAttempts = options.maxAttempts ?? DEFAULT_RETRY.maxAttempts;
  for (let attempt = 1; ; attempt++) {
    // The error of a try this execution made is thrown as it was; one recorded earlier, rebuilt.
    let thrown: { error: unknown } | undefined;
    const outcome = await execution.runStep<TryOutcome<T>>(`retry.onThrow ${attempt}/${maxAttempts}`, async () => {
      try {
        return { ok: true, value: await runInsideStep(execution, "retry.onThrow()", () => fn({ attempt, maxAttempts })) };
      } catch (error) {
        if ((error as { name?: unknown } | null)?.name === "AbortTaskRunError") throw error;
        thrown = { error };
        return { ok: false, error: recorded(error) };
      }
    });
    if (outcome.ok) return outcome.value;
    const delay = nextRetryDelay(options, attempt);
    if (delay === undefined) throw thrown ? thrown.error : rebuilt(outcome.error);
    logger.warn(`retry.onThrow: try ${attempt}/${maxAttempts} failed, trying again in ${delay} ms`, { error: outcome.error });
    await sleepDurably(execution, delay);
  }
}

/**
 * Retries inside a run (Trigger.dev's `retry`): `retry.onThrow(fn, options)` and
 * `retry.fetch(url, init)`, both recorded try by try in the run's ledger, so a resumed run does
 * not repeat a try it recorded.
 *
 * @example
 * const quote = await retry.onThrow(async () => pricing.quote(payload.sku), { maxAttempts: 3 });
 * const response = await retry.fetch("https://api.example.com/orders", { method: "POST", body, retry: { byStatus: { "5xx": { strategy: "backoff", maxAttempts: 5 } } } });
 */
export const retry = { onThrow, fetch: retryFetch };
