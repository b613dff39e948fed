import type { FastifyInstance } from "fastify";
import { createPool, withTransaction } from "@svc/runtime/db";
import { ensureDefaultProject, FakeClock, SecretBox, systemClock, type Clock, type EngineDeps, type ProjectCredentials } from "@svc/runtime/engine";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";
import { PgBossDispatcher, startBoss } from "@svc/queue";
import { createApp } from "../src/app.ts";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import type { ApiLimits } from "../src/http/limits.ts";
import { credentialVerifiers } from "../src/auth/verifiers.ts";
import { SecretKeyCache } from "../src/auth/secret-key-cache.ts";
import type { AppDeps } from "../src/deps.ts";
import { SessionStreamHub } from "../src/realtime/session-stream-hub.ts";

export const TEST_ENCRYPTION_KEY = "test-encryption-key-0123456789";

export interface TestApi {
  app: FastifyInstance;
  deps: AppDeps;
  engine: EngineDeps;
  db: TestDatabase;
  /** The default project with its four environments and secret keys. */
  project: ProjectCredentials;
  /** Authorization header for the default project's dev environment. */
  devAuth: { authorization: string };
  close(): Promise<void>;
}

/** An API app on a fresh database (cloned template), driven with `app.inject`. */
export async function startTestApi(options: { clock?: Clock; limits?: Partial<ApiLimits> } = {}): Promise<TestApi> {
  const db = await createTestDatabase();
  const boss = await startBoss({ connectionString: db.url, supervise: false, max: 3 });
  const engine: EngineDeps = {
    db: db.pool,
    clock: options.clock ?? systemClock,
    dispatcher: new PgBossDispatcher(boss),
    secrets: new SecretBox(TEST_ENCRYPTION_KEY),
    apiUrl: "http://svc.test",
  };
  const project = await withTransaction(db.pool, (tx) => ensureDefaultProject(tx, engine.secrets, engine.clock.now()));
  // Wired as main.ts wires it: secret keys are cached while change notices are being received.
  const secretKeys = new SecretKeyCache();
  await secretKeys.start(db.url, () => {});
  const sessionStreams = new SessionStreamHub({ db: db.pool, databaseUrl: db.url, clock: engine.clock, onError: (error) => console.error(error) });
  await sessionStreams.start();
  const deps: AppDeps = { engine, ...credentialVerifiers(engine), secretKeys, sessionStreams };
  const app = await createApp(deps, { logger: false, printUnhandledErrors: Boolean(process.env.SVC_DEBUG_ERRORS), ...(options.limits ? { limits: options.limits } : {}) });
  await app.ready();
  return {
    app,
    deps,
    engine,
    db,
    project,
    devAuth: { authorization: `Bearer ${project.environments.dev.secretKey}` },
    async close() {
      await sessionStreams.stop();
      await app.close();
      await secretKeys.stop();
      await boss.stop({ graceful: false, close: true });
      await db.drop();
    },
  };
}

export { FakeClock };

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
  const sessionStreams = new SessionStreamHub({ db: pool, databaseUrl: api.db.url, clock: engine.clock, onError: (error) => console.error(error) });
  await sessionStreams.start();
  const app = await createApp({ engine, ...credentialVerifiers(engine), sessionStreams }, { logger: false });
  await app.ready();
  return {
    app,
    async close() {
      await sessionStreams.stop();
      await app.close();
      await pool.end();
    },
  };
}
