import { createPool } from "../db/queryable.ts";
import { connectTestEngine, type ConnectedEngine, type DispatcherFactory, type TestDispatcher, type TestEngineOptions } from "./connect-engine.ts";
import { createTestDatabase, type TestDatabase } from "./database.ts";

/** An engine on a fresh test database (a clone of the migrated template), dropped on close. */
export interface TestEngine<D extends TestDispatcher = TestDispatcher> extends ConnectedEngine<D> {
  db: TestDatabase;
  /**
   * Engine deps as another process on the same database holds them: a pool of its own (`poolMax`
   * connections), a dispatcher of its own, this engine's clock. Close it before this engine.
   */
  connect<E extends TestDispatcher = TestDispatcher>(options: { poolMax: number; applicationName?: string; dispatcher?: DispatcherFactory<E> }): Promise<ConnectedEngine<E>>;
  /** Stops the dispatcher and drops the database. */
  close(): Promise<void>;
}

/**
 * The engine as tests use it: a fresh, isolated database migrated like production (cloned from
 * the template the global setup migrated), engine deps on it with an injected clock and the
 * dispatcher `options.dispatcher` starts, and the default project.
 */
export async function startTestEngine<D extends TestDispatcher = TestDispatcher>(options: TestEngineOptions<D> = {}): Promise<TestEngine<D>> {
  const db = await createTestDatabase();
  let connected: ConnectedEngine<D>;
  try {
    connected = await connectTestEngine(db, options);
  } catch (error) {
    await db.drop();
    throw error;
  }
  return {
    ...connected,
    db,
    async connect(other) {
      const pool = createPool(db.url, { max: other.poolMax, applicationName: other.applicationName ?? "svc-test-other", onError: () => {} });
      try {
        const more = await connectTestEngine({ url: db.url, pool }, { clock: connected.engine.clock, apiUrl: connected.engine.apiUrl, dispatcher: other.dispatcher });
        return {
          ...more,
          async close() {
            try {
              await more.close();
            } finally {
              await pool.end();
            }
          },
        };
      } catch (error) {
        await pool.end();
        throw error;
      }
    },
    async close() {
      try {
        await connected.close();
      } finally {
        await db.drop();
      }
    },
  };
}
