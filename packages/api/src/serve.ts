import pino from "pino";
import { openDatabase, SharedListener } from "@svc/runtime/db";
import { SecretBox, startTracing, systemClock, WakeDispatcher } from "@svc/runtime/engine";
import { createApp } from "./app.ts";
import { limitsFromConfig, parseApiConfig, publicUrlOf } from "./config.ts";
import { credentialVerifiers } from "./auth/verifiers.ts";
import { SecretKeyCache } from "./auth/secret-key-cache.ts";
import { RUN_STREAM_RECORDS, SessionStreamHub } from "./realtime/session-stream-hub.ts";
import { createRunChangeHub } from "./realtime/create-run-change-hub.ts";
import { createApiMetrics } from "./metrics/api-metrics.ts";

export interface ServedApi {
  port: number;
  /** Ends open streams, stops taking requests, closes the database pools. */
  close(): Promise<void>;
}

/**
 * The API process (`svc api`, `node packages/api/dist/main.js`): configuration from `env`, waits
 * for the database, listens. SIGTERM/SIGINT close it and exit.
 */
export async function serveApi(env: NodeJS.ProcessEnv, options: { metrics?: boolean } = {}): Promise<ServedApi> {
  const config = parseApiConfig(env);
  const logger = pino({ level: config.LOG_LEVEL, base: { service: "svc-api" } });

  const { db, report, untilReachable } = await openDatabase({ url: config.DATABASE_URL, max: config.DB_POOL_MAX, applicationName: "svc-api", logger, clock: systemClock, errorMessage: "api error" });
  const engine = {
    db,
    clock: systemClock,
    dispatcher: new WakeDispatcher(),
    secrets: new SecretBox(config.SVC_ENCRYPTION_KEY),
    apiUrl: publicUrlOf(config),
  };
  // The process's one LISTEN connection: credential changes and session records.
  const notices = new SharedListener({ url: config.DATABASE_URL, onError: (error) => report(error, "notices") });
  const secretKeys = new SecretKeyCache({ notices });
  const sessionStreams = new SessionStreamHub({ db, notices, onError: (error, context) => report(error, context) });
  const runStreams = new SessionStreamHub({ db, notices, onError: (error, context) => report(error, context), source: RUN_STREAM_RECORDS });
  const runChanges = createRunChangeHub({ db, clock: systemClock, notices, onError: (error, context) => report(error, context) });
  await untilReachable(() => notices.start());
  const tracing = await startTracing(env, "svc-api");
  // Metrics are on unless a caller turns them off (the benchmark that measures what they cost).
  const metrics = options.metrics === false ? undefined : createApiMetrics({ pool: db, clock: systemClock, ...(config.METRICS_TOKEN ? { token: config.METRICS_TOKEN } : {}) });
  const deps = { engine, ...credentialVerifiers(engine, secretKeys), secretKeys, sessionStreams, runStreams, runChanges, ...(metrics ? { metrics } : {}) };
  const app = await createApp(deps, { logger, limits: limitsFromConfig(config), trustProxy: config.TRUST_PROXY, printUnhandledErrors: config.SVC_DEBUG_ERRORS, tracer: tracing?.tracer ?? null });
  await app.listen({ port: config.PORT, host: config.HOST });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.PORT;
  logger.info({ port, publicUrl: engine.apiUrl }, "svc api listening");

  const close = async () => {
    // Open streams end first (their clients reconnect elsewhere with Last-Event-ID): close waits for them.
    sessionStreams.stop();
    runStreams.stop();
    runChanges.stop();
    await app.close();
    await runChanges.watches.stop();
    await notices.stop();
    await db.end();
    await tracing?.shutdown();
  };
  const shutdown = (signal: string) => {
    logger.info({ signal }, "shutting down");
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
  return { port, close };
}
