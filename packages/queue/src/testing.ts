import type { PgBoss } from "pg-boss";
import type { DispatcherFactory, TestDispatcher } from "@svc/runtime/testing";
import { startBoss } from "./boss.ts";
import { PgBossDispatcher } from "./dispatcher.ts";

/** A test engine's pg-boss: the instance (tests reach into its queues) and its dispatcher. */
export interface PgBossTestDispatcher extends TestDispatcher {
  boss: PgBoss;
  dispatcher: PgBossDispatcher;
}

/**
 * pg-boss as the dispatcher of a test engine (startTestEngine's `dispatcher`): an instance of its
 * own on the engine's database (`max` connections, default 4), stopped with the engine. `supervise`
 * as a worker's does (default: as an API process's, which only inserts jobs).
 */
export function pgBossDispatcher(options: { max?: number; supervise?: boolean } = {}): DispatcherFactory<PgBossTestDispatcher> {
  return async (db) => {
    const boss = await startBoss({ connectionString: db.url, supervise: options.supervise ?? false, max: options.max ?? 4 });
    return { boss, dispatcher: new PgBossDispatcher(boss), stop: () => boss.stop({ graceful: false, close: true }) };
  };
}
