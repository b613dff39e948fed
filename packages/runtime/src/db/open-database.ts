import type pg from "pg";
import type { Clock } from "../clock.ts";
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
  /** Runs startup work again until the database answers (a process may start before its database). */
  untilReachable: <T>(work: () => Promise<T>) => Promise<T>;
}

/**
 * What every svc process does first: a pool whose connection errors are reported, waiting for the
 * database if it is not up yet, and the migrations (logged when they changed anything).
 */
export async function openDatabase(options: { url: string; max: number; applicationName: string; logger: Logger; clock: Clock; errorMessage: string }): Promise<OpenDatabase> {
  const report = errorReporter(options.logger, options.clock, options.errorMessage);
  const db = createPool(options.url, { max: options.max, applicationName: options.applicationName, onError: (error) => report(error, "pool") });
  const untilReachable = <T>(work: () => Promise<T>) => retryWhileUnavailable(work, { maxMs: Infinity, onRetry: (error) => report(error, "startup") });
  const migrated = await untilReachable(() => migrate(db));
  if (migrated.applied.length + migrated.backfilled.length + migrated.functions.length > 0) options.logger.info(migrated, "database schema brought up to date");
  return { db, report, untilReachable };
}
