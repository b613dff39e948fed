import type { EngineDeps, Environment } from "@svc/runtime/engine";
import type { WorkerOptions } from "./worker.ts";

/**
 * What the worker takes from other engine modules: the environment's variables for process.env
 * and declarative schedules. Wired here so worker.ts stays about claiming and executing.
 */
export function workerIntegrations(_engine: EngineDeps, _environment: Environment): Pick<WorkerOptions, "prepareEnvironment" | "onRegistered" | "dueWork"> {
  return {};
}
