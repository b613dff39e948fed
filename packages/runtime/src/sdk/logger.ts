import { trace as otelTrace, SpanStatusCode, type Span } from "@opentelemetry/api";
import { currentExecution, type RunExecution } from "./run-context.ts";
import { currentStep } from "./step-scope.ts";
import { consoleTaskLogs, type LogLevel, type TaskLogRecord } from "./task-logs.ts";

function write(level: LogLevel, message: string, attributes?: Record<string, unknown>): void {
  const execution = currentExecution();
  if (!execution) {
    consoleTaskLogs.write({ level, message, ...(attributes !== undefined ? { attributes } : {}), at: new Date(), run: { id: "", attempt: 0, taskId: "" } });
    return;
  }
  execution.logs.write(runLogRecord(execution, level, message, attributes, "logger"));
}

/**
 * A line logged now inside `execution`: with its run, attempt, the step it is in and where in the
 * ledger it falls, and whether the run is replaying (said once, as a notice, when it is).
 */
export function runLogRecord(execution: RunExecution, level: LogLevel, message: string, attributes: Record<string, unknown> | undefined, source: "logger" | "console"): TaskLogRecord {
  const run = { id: execution.ctx.run.id, attempt: execution.ctx.attempt.number, taskId: execution.ctx.task.id };
  const replayed = execution.isReplaying();
  if (replayed) execution.notices.say("replayed-logs", run);
  const step = currentStep();
  return {
    level,
    message,
    ...(attributes !== undefined ? { attributes } : {}),
    at: execution.now(),
    run,
    ...(source === "console" ? { source } : {}),
    ...(step !== undefined ? { step } : {}),
    ledger: execution.ledgerPosition(),
    ...(replayed ? { replayed } : {}),
  };
}

/**
 * Structured logging from task code (Trigger.dev's `logger`). In a run each line goes to the
 * worker's log with the run's id, attempt and task, and is stored with the run (its dashboard
 * page, its trace: docs/run-logs.md); outside a run, to the console. A resumed run replays its
 * code from the top: lines it logs again before it gets back to where it stopped are marked
 * `replayed` (the worker writes those at debug level and does not store them again), so each
 * line counts once.
 *
 * @example
 * logger.info("Charging card", { orderId: payload.orderId, amount: payload.amount });
 * logger.error("Payment declined", { code: result.code });
 */
export const logger = {
  debug: (message: string, attributes?: Record<string, unknown>) => write("debug", message, attributes),
  log: (message: string, attributes?: Record<string, unknown>) => write("log", message, attributes),
  info: (message: string, attributes?: Record<string, unknown>) => write("info", message, attributes),
  warn: (message: string, attributes?: Record<string, unknown>) => write("warn", message, attributes),
  error: (message: string, attributes?: Record<string, unknown>) => write("error", message, attributes),
  /**
   * Runs `fn` in an OpenTelemetry span named `name` (recorded when the process has a tracer
   * provider registered), ending it when `fn` settles.
   *
   * @example
   * const rows = await logger.trace("load-rows", async (span) => { span.setAttribute("table", "orders"); return db.load(); });
   */
  trace<T>(name: string, fn: (span: Span) => Promise<T>, options?: { attributes?: Record<string, string | number | boolean> }): Promise<T> {
    return otelTrace.getTracer("svc-task").startActiveSpan(name, { ...(options?.attributes ? { attributes: options.attributes } : {}) }, async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    });
  },
};
