import pino from "pino";
import { openDatabase } from "@svc/runtime/db";
import { SecretBox, startTracing, systemClock, WakeDispatcher, type EngineDeps } from "@svc/runtime/engine";
import { parseWorkerConfig } from "./config.ts";
import { resolveWorkerEnvironment } from "./resolve-environment.ts";
import { tokenCreator } from "./execution/create-token.ts";
import { pinoTaskLogs } from "./execution/task-logs.ts";
import { installShutdown } from "./shutdown.ts";
import { loadTasks } from "./tasks/load-tasks.ts";
import { CONFIG_FILE_NAMES, findConfigFile } from "@svc/runtime/sdk";
import { registerTypeScriptLoader } from "./tasks/typescript-loader.ts";
import { envVarsAndSchedules } from "./env-vars-and-schedules.ts";
import { TaskEnv } from "./task-env.ts";
import { createWorker } from "./worker.ts";
import { logRunLifecycle } from "./run-lifecycle-log.ts";
import { createWorkerMetrics } from "./metrics/worker-metrics.ts";
import { startMetricsServer, type MetricsServer } from "./metrics/metrics-server.ts";

export interface ServedWorker {
  workerId: string;
  /** The port GET /metrics is served on (WORKER_METRICS_PORT), or null without it. */
  metricsPort: number | null;
  workerVersion: string;
  taskIds: string[];
  /** The task folders svc.config names (absolute): `svc dev` reloads when a file is added there. */
  taskDirs: string[];
}

/**
 * The worker process (`svc worker`, `node packages/worker/dist/main.js`): configuration from
 * `env`, loads the tasks svc.config names, serves them. SIGTERM/SIGINT drain, a second one exits.
 */
export async function serveWorker(env: NodeJS.ProcessEnv): Promise<ServedWorker> {
  const config = parseWorkerConfig(env);
  const logger = pino({ level: config.LOG_LEVEL, base: { service: "svc-worker" } });
  const configPath = config.SVC_CONFIG ?? findConfigFile(process.cwd());
  if (!configPath) throw new Error(`invalid worker configuration: no ${CONFIG_FILE_NAMES.join(", ")} in ${process.cwd()}; run \`svc init\`, or set SVC_CONFIG (svc worker --config <file>)`);
  const { db, report, untilReachable } = await openDatabase({ url: config.DATABASE_URL, max: config.DB_POOL_MAX, applicationName: "svc-worker", logger, clock: systemClock, errorMessage: "worker error" });
  const engine: EngineDeps = { db, clock: systemClock, dispatcher: new WakeDispatcher(), secrets: new SecretBox(config.SVC_ENCRYPTION_KEY), apiUrl: config.SVC_PUBLIC_URL ?? config.SERVICE_API_URL };

  const { environment, secretKey } = await untilReachable(() => resolveWorkerEnvironment(engine, config.SERVICE_SECRET_KEY, config.SERVICE_PREVIEW_BRANCH));
  // Task code reads its environment's variables from process.env, and its API client (tasks.trigger,
  // runs.list …) is configured from SERVICE_*, as users expect.
  // That is this process's environment, whatever `env` the configuration was read from.
  const taskEnv = new TaskEnv(process.env);
  taskEnv.setDefaults({ SERVICE_SECRET_KEY: secretKey, SERVICE_API_URL: config.SERVICE_API_URL, SERVICE_PREVIEW_BRANCH: environment.branchName });
  await registerTypeScriptLoader();
  const loaded = await loadTasks(configPath);

  const workerVersion = config.WORKER_VERSION ?? loaded.version;
  const tracing = await startTracing(env, "svc-worker");
  const worker = createWorker({
    engine,
    databaseUrl: config.DATABASE_URL,
    environment,
    tasks: loaded.tasks,
    workerVersion,
    concurrency: config.WORKER_CONCURRENCY,
    leaseMs: config.WORKER_LEASE_MS,
    retention: {
      defaultDays: config.RUN_RETENTION_DAYS,
      intervalMs: config.RUN_RETENTION_INTERVAL_SECONDS * 1000,
      batchSize: config.RUN_RETENTION_BATCH_SIZE,
      restRatio: config.RUN_RETENTION_REST_RATIO,
    },
    createToken: tokenCreator(engine),
    taskLogs: pinoTaskLogs(logger),
    ...envVarsAndSchedules(engine, environment, taskEnv),
    onError: report,
    tracer: tracing?.tracer ?? null,
  });
  logRunLifecycle(worker.events, logger, config.WORKER_LOG_RUNS ? "info" : "debug");
  let metricsServer: MetricsServer | null = null;
  if (config.WORKER_METRICS_PORT !== undefined) {
    const metrics = createWorkerMetrics(worker, { pool: db, clock: systemClock });
    metricsServer = await startMetricsServer(metrics.registry, { port: config.WORKER_METRICS_PORT, token: config.METRICS_TOKEN, onError: (error) => report(error, "metrics") });
    logger.info({ port: metricsServer.port, token: config.METRICS_TOKEN !== undefined }, "serving GET /metrics");
  }
  worker.events.on("environmentSwept", (e) => {
    if (Object.values(e.deleted).some((n) => n > 0)) logger.info(e, "deleted finished runs past their retention");
  });
  await worker.start();
  const taskIds = loaded.tasks.map((t) => t.id);
  logger.info(
    { workerId: worker.id, environment: environment.slug, branch: environment.branchName ?? undefined, project: environment.projectRef, tasks: taskIds, workerVersion, concurrency: config.WORKER_CONCURRENCY },
    "svc worker started",
  );

  installShutdown(
    () => worker.drain(),
    async () => {
      await metricsServer?.close();
      await db.end();
      await tracing?.shutdown();
    },
    logger,
    config.SHUTDOWN_TIMEOUT_MS,
  );
  return { workerId: worker.id, metricsPort: metricsServer?.port ?? null, workerVersion, taskIds, taskDirs: loaded.dirs };
}
