import { systemClock, type Clock } from "../clock.ts";
import { withTransaction, type Pool } from "../db/queryable.ts";
import type { EngineDeps } from "../engine/deps.ts";
import { WakeDispatcher, type Dispatcher } from "../engine/dispatch.ts";
import { getEnvironment, type Environment } from "../engine/tenancy/environments.ts";
import { ensureDefaultProject, type ProjectCredentials } from "../engine/tenancy/projects.ts";
import { SecretBox } from "../engine/tenancy/secret-box.ts";

/** The encryption key of every test engine (processes a test spawns get it as SVC_ENCRYPTION_KEY). */
export const TEST_ENCRYPTION_KEY = "test-encryption-key-0123456789";

/** The database an engine is set up on: its URL (for the dispatcher) and a pool. */
export interface EngineDatabase {
  url: string;
  pool: Pool;
}

/** The dispatcher of a test engine, and how to stop it. */
export interface TestDispatcher {
  dispatcher: Dispatcher;
  stop(): Promise<void>;
}

/** Starts a test engine's dispatcher on its database; `noDispatch` is the default. */
export type DispatcherFactory<D extends TestDispatcher> = (db: EngineDatabase) => Promise<D>;

/**
 * Wakes nobody: for tests of the engine alone, where no worker claims runs (runs are still
 * written, ready to be claimed, as they would be).
 */
export const noDispatch: DispatcherFactory<TestDispatcher> = async () => ({ dispatcher: { dispatch: async () => {} }, stop: async () => {} });

/** The dispatcher of every process (WakeDispatcher): wakes the workers that claim the runs. */
export const wakeDispatcher: DispatcherFactory<TestDispatcher> = async () => ({ dispatcher: new WakeDispatcher(), stop: async () => {} });

export interface TestEngineOptions<D extends TestDispatcher> {
  /** Default: systemClock; a FakeClock to drive time by hand. */
  clock?: Clock | undefined;
  /** Default: noDispatch. */
  dispatcher?: DispatcherFactory<D> | undefined;
  /** The API's public URL, which callback URLs are built from. Default: http://svc.test. */
  apiUrl?: string;
}

/** Engine deps on a database, as a process would hold them, with the default project. */
export interface ConnectedEngine<D extends TestDispatcher = TestDispatcher> {
  engine: EngineDeps;
  /** What the dispatcher factory started; `engine.dispatcher` is its dispatcher. */
  queue: D;
  /** The default project, with its four environments and secret keys. */
  project: ProjectCredentials;
  /** The default project's dev environment. */
  env: Environment;
  /** Stops the dispatcher; the database is the caller's. */
  close(): Promise<void>;
}

/**
 * Engine deps on `db` (its pool, `options`' clock and dispatcher, the test encryption key) and the
 * default project, created when it is missing. For a stack on a database made elsewhere (the
 * benchmarks); tests use startTestEngine. No vitest import: `pnpm bench` uses it too.
 */
export async function connectTestEngine<D extends TestDispatcher = TestDispatcher>(db: EngineDatabase, options: TestEngineOptions<D> = {}): Promise<ConnectedEngine<D>> {
  // Without a factory, D is the default TestDispatcher: noDispatch is one.
  const queue = await (options.dispatcher ?? (noDispatch as DispatcherFactory<D>))(db);
  try {
    const engine: EngineDeps = {
      db: db.pool,
      clock: options.clock ?? systemClock,
      dispatcher: queue.dispatcher,
      secrets: new SecretBox(TEST_ENCRYPTION_KEY),
      apiUrl: options.apiUrl ?? "http://svc.test",
    };
    const project = await withTransaction(db.pool, (tx) => ensureDefaultProject(tx, engine.secrets, engine.clock.now()));
    const env = await getEnvironment(db.pool, project.environments.dev.id);
    if (!env) throw new Error(`the default project's dev environment ${project.environments.dev.id} is missing`);
    return { engine, queue, project, env, close: () => queue.stop() };
  } catch (error) {
    await queue.stop();
    throw error;
  }
}
