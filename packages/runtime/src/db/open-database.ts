import type pg from "pg";
import type { Clock } from "../clock.ts";
import { LogThrottle } from "../log-throttle.ts";
import { describeDatabaseError } from "./describe-error.ts";
import { errorReporter } from "./error-reporter.ts";
import { migrate } from "./migrate.ts";
import { createPool } from "./queryable.ts";
import { retryWhileUnavailable } from "./unavailable.ts";

interface Logger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface OpenDatabase {
  db: pg.Pool;
  /** Reports a background error (see errorReporter); `where` names the loop. */
  report: (error: unknown, where: string) => void;
  /**
   * Runs startup work again until the database answers (a process may start before its database),
   * saying what is wrong meanwhile; a missing database or refused credentials end the process.
   */
  untilReachable: <T>(work: () => Promise<T>) => Promise<T>;
}

/**
 * What every svc process does first: a pool whose connection errors are reported, waiting for the
 * database if it is not up yet, and the migrations (logged when they changed anything).
 *
 * Startup work waits out an outage (Postgres down, unreachable, starting up), logging at most every
 * 10 s a sentence that says so (describeDatabaseError). A database that does not exist, or a server
 * that refuses the user or password, is a mistake in the configuration that no wait mends: the
 * sentence saying so is logged and the process ends with exit code 1, without a stack trace.
 */
export async function openDatabase(options: {
  url: string;
  max: number;
  applicationName: string;
  logger: Logger;
  clock: Clock;
  errorMessage: string;
  /** Ends the process (tests pass their own). @default process.exit */
  exit?: (code: number) => never;
}): Promise<OpenDatabase> {
  const { url, logger } = options;
  const report = errorReporter(logger, options.clock, options.errorMessage);
  const db = createPool(url, { max: options.max, applicationName: options.applicationName, onError: (error) => report(error, "pool") });
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const throttle = new LogThrottle(options.clock);
  const onRetry = (error: unknown) => {
    const described = describeDatabaseError(error, url);
    if (!described) return report(error, "startup");
    const gate = throttle.pass("startup");
    if (gate.pass) logger.warn({ where: "startup", kind: described.kind, retrying: true, suppressed: gate.suppressed }, described.message);
  };
  const untilReachable = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await retryWhileUnavailable(work, { maxMs: Infinity, onRetry });
    } catch (error) {
      const described = describeDatabaseError(error, url);
      if (!described || described.transient) throw error;
      logger.error({ where: "startup", kind: described.kind }, described.message);
      return exit(1);
    }
  };
  const migrated = await untilReachable(() => migrate(db));
  if (migrated.applied.length + migrated.backfilled.length + migrated.functions.length > 0) logger.info(migrated, "database schema brought up to date");
  return { db, report, untilReachable };
}
