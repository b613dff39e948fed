/** The levels of `logger` (Trigger.dev's). */
export type LogLevel = "debug" | "log" | "info" | "warn" | "error";

/** One line task code logged during a run, with the run it belongs to. */
export interface TaskLogRecord {
  level: LogLevel;
  message: string;
  /** The second argument of `logger.info(message, attributes)`, as given. */
  attributes?: Record<string, unknown>;
  /** When it was logged (the worker's clock). */
  at: Date;
  run: { id: string; attempt: number; taskId: string };
  /** Who logged it: task code's `logger` (the default) or its `console`. */
  source?: "logger" | "console";
  /** The step.run whose function logged it. */
  step?: string;
  /** The durable call (step, wait) of the run's ledger the line comes before: where in the run it falls. */
  ledger?: { epoch: number; stepKey: string };
  /** A note from svc itself (see ReplayNotices), not from task code: its code. */
  notice?: string;
  /**
   * Logged again by a resumed run while it replays up to where its previous execution stopped
   * (the line was logged then already).
   */
  replayed?: boolean;
}

/**
 * Where the lines of `logger.*` (and, in a worker, `console.*`) go. The worker writes them to its
 * own log (pino) and stores them with the run (docs/run-logs.md).
 */
export interface TaskLogSink {
  write(record: TaskLogRecord): void;
}

/** Outside a run (a script importing a task file), `logger` writes to the console. */
export const consoleTaskLogs: TaskLogSink = {
  write(record) {
    const method = record.level === "log" ? "log" : record.level;
    if (record.attributes === undefined) console[method](record.message);
    else console[method](record.message, record.attributes);
  },
};
