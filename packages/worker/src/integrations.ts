import { dueSchedules, loadEnvironmentVariables, syncDeclarativeSchedules, type EngineDeps, type Environment } from "@svc/runtime/engine";
import type { WorkerOptions } from "./worker.ts";

/** How long loaded env vars are reused before the next run re-reads them. */
const ENV_VARS_TTL_MS = 2000;

/**
 * What the worker takes from other engine modules: the environment's variables in process.env
 * (refreshed before runs, so a change applies to the next run) and declarative schedules.
 */
export function workerIntegrations(engine: EngineDeps, environment: Environment): Pick<WorkerOptions, "prepareEnvironment" | "onRegistered" | "dueWork"> {
  let loadedAt = 0;
  let applied = new Set<string>();
  let loading: Promise<void> | null = null;
  async function refresh() {
    const vars = await loadEnvironmentVariables(engine.db, engine.secrets, environment.id);
    // One worker serves one environment, so process.env is that environment's for every run.
    for (const name of applied) if (!(name in vars)) delete process.env[name];
    for (const [name, value] of Object.entries(vars)) process.env[name] = value;
    applied = new Set(Object.keys(vars));
    loadedAt = Date.now();
  }
  return {
    prepareEnvironment: async () => {
      if (Date.now() - loadedAt < ENV_VARS_TTL_MS) return;
      loading ??= refresh().finally(() => (loading = null));
      await loading;
    },
    onRegistered: async (tasks) => {
      const declared = tasks.filter((t) => t.schedule).map((t) => ({ id: t.id, cron: t.schedule!.cron, timezone: t.schedule!.timezone }));
      await syncDeclarativeSchedules(engine.db, environment.id, declared, engine.clock.now());
    },
    dueWork: [dueSchedules],
  };
}
