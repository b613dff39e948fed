/**
 * Whether `error` says the database cannot be reached right now (down, restarting, refusing
 * connections, the connection cut mid-statement), as opposed to a statement that failed on its
 * merits. Such an error is transient: the same work may succeed once Postgres is back, so the API
 * answers 503 and background loops back off and try again.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  // Work that ran several statements at once (the timer loop's due work) fails with all their errors.
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.every(isDatabaseUnavailable);
  for (let e = error, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === "string" && (UNAVAILABLE_CODES.has(code) || code.startsWith("08"))) return true;
    if (typeof message === "string" && UNAVAILABLE_MESSAGES.some((m) => message.includes(m))) return true;
  }
  return false;
}

const UNAVAILABLE_CODES = new Set([
  // Sockets: nothing listens, the connection was cut, the host cannot be reached.
  "ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN",
  // Postgres: admin_shutdown, crash_shutdown, cannot_connect_now (starting up, shutting down,
  // recovering), too_many_connections. Class 08 (connection exceptions) is matched by prefix.
  "57P01", "57P02", "57P03", "53300",
]);

// node-postgres reports a lost connection with these messages and no code.
const UNAVAILABLE_MESSAGES = [
  "Connection terminated",
  "Client has encountered a connection error and is not queryable",
  "timeout exceeded when trying to connect",
  "Connection terminated due to connection timeout",
];

/**
 * Runs `work` again while it fails because the database is unreachable, backing off from 100 ms
 * to 1 s between tries, for at most `maxMs`; any other error, or the last one, is thrown. For a
 * worker's own guarded writes (claims, ledger records, endings): during a Postgres restart the
 * execution waits for the database instead of losing its attempt. `work` must be safe to run
 * again after a try whose commit may have landed before the connection was cut: a guarded
 * update that then finds nothing to change.
 */
export async function retryWhileUnavailable<T>(work: () => Promise<T>, options: { maxMs?: number; onRetry?: (error: unknown) => void } = {}): Promise<T> {
  const maxMs = options.maxMs ?? 30_000;
  let waited = 0;
  for (let delay = 100; ; delay = Math.min(1000, delay * 2)) {
    try {
      return await work();
    } catch (error) {
      if (!isDatabaseUnavailable(error) || waited >= maxMs) throw error;
      options.onRetry?.(error);
      await new Promise((resolve) => setTimeout(resolve, delay));
      waited += delay;
    }
  }
}
