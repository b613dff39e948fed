import type { Clock } from "../clock.ts";
import { LogThrottle } from "../log-throttle.ts";
import { isDatabaseUnavailable } from "./unavailable.ts";

interface Logger {
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

/**
 * How a process reports the errors of its background work (`where` names the loop): an error
 * saying the database is unreachable is expected during a Postgres restart and retried, so it is
 * logged as a warning at most once per 10 s per loop, with the number held back; anything else
 * is logged in full, every time.
 */
export function errorReporter(logger: Logger, clock: Clock, message: string): (error: unknown, where: string) => void {
  const throttle = new LogThrottle(clock);
  return (error, where) => {
    if (!isDatabaseUnavailable(error)) return logger.error({ err: error, where }, message);
    const gate = throttle.pass(where);
    if (gate.pass) logger.warn({ where, cause: (error as Error)?.message ?? String(error), suppressed: gate.suppressed }, "database unavailable; retrying");
  };
}
