import type { Logger } from "pino";
import type { WorkerEvents } from "./events.ts";

/**
 * One line in the worker's log per run start, wait, resume, retry, failure (with its error) and
 * completion, each with the run's id and task: what `svc dev` prints (WORKER_LOG_RUNS=true), so
 * that a run is never silent. `level`: info under svc dev, debug otherwise (one line per event of
 * every run is too many for a production log at its default level). A failure is an error line
 * when the others are info.
 */
export function logRunLifecycle(events: WorkerEvents, logger: Logger, level: "info" | "debug"): void {
  const log = (e: { runId: string; taskId?: string | undefined }, event: string, message: string, extra: Record<string, unknown> = {}, at: "debug" | "info" | "warn" | "error" = level) =>
    logger[at]({ runId: e.runId, task: e.taskId ?? "?", event, ...extra }, message);
  events.on("runStarted", (e) => log(e, "started", `started ${e.taskId ?? "?"} (attempt ${e.attempt})`));
  events.on("runSuspended", (e) => log(e, "waiting", `waiting ${e.taskId ?? "?"}`));
  events.on("runResumed", (e) => log(e, "resumed", `resumed ${e.taskId ?? "?"} (attempt ${e.attempt})`));
  events.on("runRetryScheduled", (e) =>
    log(e, "retrying", `attempt ${e.attempt} of ${e.taskId ?? "?"} failed${e.error ? `: ${errorText(e.error)}` : ""}; retrying at ${e.at.toISOString()}`, {}, level === "info" ? "warn" : level),
  );
  events.on("runFinished", (e) => {
    if (e.status === "COMPLETED") return log(e, "completed", `completed ${e.taskId ?? "?"}`);
    log(e, "failed", `${e.status} ${e.taskId ?? "?"}${e.error ? `: ${errorText(e.error)}` : ""}`, { status: e.status }, level === "info" ? "error" : level);
  });
}

function errorText(error: { name?: string; message: string }): string {
  return error.name && error.name !== "Error" ? `${error.name}: ${error.message}` : error.message;
}
