import { dueSchedules, loadEnvironmentVariables, syncDeclarativeSchedules, type EngineDeps, type Environment } from "@svc/runtime/engine";
import type { TaskEnv } from "./task-env.ts";
import type { WorkerOptions } from "./worker-options.ts";

/** How long loaded env vars are reused before the next run re-reads them. */
const ENV_VARS_TTL_MS = 2000;

export interface EnvVarsAndSchedulesOptions {
  /** How long loaded env vars are reused before a run re-reads them (tests use 0). @default 2000 */
  envVarsTtlMs?: number;
}

/**
 * What the worker takes from other engine modules: the environment's variables for task code
 * (`taskEnv`: process.env; refreshed before runs, so a change applies to the next run) and
 * declarative schedules.
 */
export function envVarsAndSchedules(
  engine: EngineDeps,
  environment: Environment,
  taskEnv: TaskEnv,
  options: EnvVarsAndSchedulesOptions = {},
): Pick<WorkerOptions, "prepareEnvironment" | "onRegistered" | "dueWork"> {
  const ttlMs = options.envVarsTtlMs ?? ENV_VARS_TTL_MS;
  let loadedAt = 0;
  let loading: Promise<void> | null = null;
  async function refresh() {
    let vars: Record<string, string>;
    try {
      vars = await loadEnvironmentVariables(engine.db, engine.secrets, environment.id);
    } catch (error) {
      throw new Error(`Could not load the environment variables of ${environment.slug}: ${(error as Error).message}`, { cause: error });
    }
    taskEnv.applyVariables(vars);
    loadedAt = engine.clock.now().getTime();
  }
  return {
    prepareEnvironment: async () => {
      if (engine.clock.now().getTime() - loadedAt < ttlMs) return;
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
