import { startBoss } from "./boss.ts";

/** Creates (or migrates) pg-boss's own schema. Used by tests to build their template database. */
export async function installQueueSchema(connectionString: string): Promise<void> {
  const boss = await startBoss({ connectionString, supervise: false, max: 2 });
  await boss.stop({ graceful: false, close: true });
}
