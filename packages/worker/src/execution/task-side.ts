import pino from "pino";
import { systemTimers } from "@svc/runtime/engine";
import { ReplayNotices } from "@svc/runtime/sdk";
import type { WorkerOptions } from "../worker-options.ts";
import type { TaskHooks } from "./executor-deps.ts";
import { pinoTaskLogs } from "./task-logs.ts";

/** What task code gets from the worker for its logs, notices and maxDuration, defaults applied. */
export function taskSide(options: Pick<WorkerOptions, "engine" | "taskLogs" | "timers">): Pick<TaskHooks, "taskLogs" | "notices" | "timers"> {
  const taskLogs = options.taskLogs ?? pinoTaskLogs(pino({ base: { service: "svc-worker" } }));
  return { taskLogs, notices: new ReplayNotices(taskLogs, options.engine.clock), timers: options.timers ?? systemTimers };
}
