import type { FastifyInstance } from "fastify";
import { createPool, SharedListener } from "@svc/runtime/db";
import { FakeClock, type Clock } from "@svc/runtime/engine";
import { startTestEngine, TEST_ENCRYPTION_KEY, wakeDispatcher, type TestEngine } from "@svc/runtime/testing";
import { createApp } from "../src/app.ts";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import type { ApiLimits } from "../src/http/limits.ts";
import { credentialVerifiers } from "../src/auth/verifiers.ts";
import { SecretKeyCache } from "../src/auth/secret-key-cache.ts";
import type { AppDeps } from "../src/deps.ts";
import type { ApiMetrics } from "../src/metrics/api-metrics.ts";
import { RUN_STREAM_RECORDS, SessionStreamHub } from "../src/realtime/session-stream-hub.ts";
import { createRunChangeHub } from "../src/realtime/create-run-change-hub.ts";

export { FakeClock, TEST_ENCRYPTION_KEY };

/** The test engine (its database, engine deps and default project) with an API app on it. */
export interface TestApi extends TestEngine {
  app: FastifyInstance;
  deps: AppDeps;
  /** Authorization header for the default project's dev environment. */
  devAuth: { authorization: string };
  /** Closes the app, then the engine. */
  close(): Promise<void>;
}

/** An API app on a fresh database (cloned template), driven with `app.inject`. */
export async function startTestApi(options: { clock?: Clock; limits?: Partial<ApiLimits>; metrics?: (te: TestEngine) => ApiMetrics } = {}): Promise<TestApi> {
  const te = await startTestEngine({ dispatcher: wakeDispatcher, clock: options.clock });
  const { engine } = te;
  // Wired as main.ts wires it: secret keys are cached while change notices are being received.
  const notices = new SharedListener({ url: te.db.url, onError: (error) => console.error(error) });
  const secretKeys = new SecretKeyCache({ notices });
  const sessionStreams = new SessionStreamHub({ db: te.db.pool, notices, onError: (error) => console.error(error) });
  const runStreams = new SessionStreamHub({ db: te.db.pool, notices, onError: (error) => console.error(error), source: RUN_STREAM_RECORDS });
  const runChanges = createRunChangeHub({ db: te.db.pool, clock: engine.clock, notices, onError: (error) => console.error(error) });
  await notices.start();
  const deps: AppDeps = { engine, ...credentialVerifiers(engine, secretKeys), secretKeys, sessionStreams, runStreams, runChanges, ...(options.metrics ? { metrics: options.metrics(te) } : {}) };
  const app = await createApp(deps, { logger: false, printUnhandledErrors: Boolean(process.env.SVC_DEBUG_ERRORS), ...(options.limits ? { limits: options.limits } : {}) });
  await app.ready();
  return {
    ...te,
    app,
    deps,
    devAuth: { authorization: `Bearer ${te.project.environments.dev.secretKey}` },
    async close() {
      sessionStreams.stop();
      runStreams.stop();
      runChanges.stop();
      await app.close();
      await runChanges.watches.stop();
      await notices.stop();
      await te.close();
    },
  };
}

/**
 * The same API as `api` (same project, keys and engine), with its pool pointing at a port nothing
 * listens on: Postgres is down. Close it before `api`.
 */
export async function startAppWithDatabaseDown(api: TestApi): Promise<{ app: FastifyInstance; close(): Promise<void> }> {
  const deadPool = createPool(`postgres://postgres@127.0.0.1:${await freePort()}/postgres`, { max: 2, connectTimeoutMs: 1000, onError: () => {} });
  const engine = { ...api.engine, db: deadPool };
  const app = await createApp({ engine, ...credentialVerifiers(engine) }, { logger: false });
  return {
    app,
    async close() {
      await app.close();
      await deadPool.end();
    },
  };
}

/** A second API process on `api`'s database: its own pool, engine and listeners (what another replica has). */
export async function startTestApiOn(api: TestApi): Promise<{ app: FastifyInstance; close(): Promise<void> }> {
  const pool = createPool(api.db.url, { max: 3, onError: () => {} });
  const engine = { ...api.engine, db: pool };
  const notices = new SharedListener({ url: api.db.url, onError: (error) => console.error(error) });
  const sessionStreams = new SessionStreamHub({ db: pool, notices, onError: (error) => console.error(error) });
  const runStreams = new SessionStreamHub({ db: pool, notices, onError: (error) => console.error(error), source: RUN_STREAM_RECORDS });
  const runChanges = createRunChangeHub({ db: pool, clock: engine.clock, notices, onError: (error) => console.error(error) });
  await notices.start();
  const app = await createApp({ engine, ...credentialVerifiers(engine), sessionStreams, runStreams, runChanges }, { logger: false });
  await app.ready();
  return {
    app,
    async close() {
      sessionStreams.stop();
      runStreams.stop();
      runChanges.stop();
      await app.close();
      await runChanges.watches.stop();
      await notices.stop();
      await pool.end();
    },
  };
}
