import pino from "pino";
import { systemTimers } from "@svc/runtime/engine";
import { ReplayNotices, type TaskLogSink } from "@svc/runtime/sdk";
import type { WorkerOptions } from "../worker-options.ts";
import type { TaskHooks } from "./executor-deps.ts";
import { RunLogWriter } from "./run-log-writer.ts";
import { pinoTaskLogs } from "./task-logs.ts";

/**
 * What task code gets from the worker for its logs, notices and maxDuration, defaults applied.
 * Each line task code logs goes to the `taskLogs` sink (the worker's log) and is stored with its
 * run (unless `runLogs: false`).
 */
export function taskSide(options: Pick<WorkerOptions, "engine" | "environment" | "taskLogs" | "runLogs" | "timers">): Pick<TaskHooks, "taskLogs" | "runLogs" | "notices" | "timers"> {
  const workerLog = options.taskLogs ?? pinoTaskLogs(pino({ base: { service: "svc-worker" } }));
  const runLogs = options.runLogs === false ? null : new RunLogWriter({ db: options.engine.db, environmentId: options.environment.id }, options.runLogs);
  const taskLogs: TaskLogSink = runLogs
    ? {
        write(record) {
          workerLog.write(record);
          runLogs.write(record);
        },
      }
    : workerLog;
  return { taskLogs, runLogs, notices: new ReplayNotices(taskLogs, options.engine.clock), timers: options.timers ?? systemTimers };
}
