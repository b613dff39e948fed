import type { Logger } from "pino";
import type { TaskLogSink } from "@svc/runtime/sdk";

/**
 * Task code's `logger.*` and `console.*` lines as lines of the worker's log, each with its run's
 * id, attempt and task (and the step it was logged in). Lines a resumed run logs again while it replays are written at debug level (they were
 * written when first logged); svc's own notices carry their code.
 */
export function pinoTaskLogs(logger: Logger): TaskLogSink {
  return {
    write(record) {
      const fields = {
        runId: record.run.id,
        attempt: record.run.attempt,
        task: record.run.taskId,
        ...(record.attributes !== undefined ? { attributes: plain(record.attributes) } : {}),
        ...(record.step !== undefined ? { step: record.step } : {}),
        ...(record.source === "console" ? { console: true } : {}),
        ...(record.notice ? { notice: record.notice } : {}),
        ...(record.replayed ? { replayed: true } : {}),
      };
      const level = record.replayed ? "debug" : record.level === "log" ? "info" : record.level;
      logger[level](fields, record.message);
    },
  };
}

/** Errors among the attributes (`logger.error("failed", { error })`) as their name, message and stack: JSON has no Error. */
function plain(attributes: Record<string, unknown>): Record<string, unknown> {
  if (!Object.values(attributes).some((value) => value instanceof Error)) return attributes;
  return Object.fromEntries(
    Object.entries(attributes).map(([key, value]) => [key, value instanceof Error ? { name: value.name, message: value.message, ...(value.stack ? { stack: value.stack } : {}) } : value]),
  );
}
