import { createPool, describeDatabaseError, migrate, withTransaction } from "@svc/runtime/db";
import { ensureDefaultProject, SecretBox, type Clock, type ProjectCredentials } from "@svc/runtime/engine";
import type { CliIo } from "../io.ts";
import { PostgresServer } from "./postgres-server.ts";
import type { DevState } from "./state.ts";

export interface DevDatabase {
  url: string;
  /** Stops the embedded Postgres; undefined for the DATABASE_URL one, which is not ours to stop. */
  stop?: () => Promise<void>;
}

/** `DATABASE_URL`, else the project's embedded Postgres (started unless one is left running). */
export async function openDevDatabase(state: DevState, env: NodeJS.ProcessEnv, projectDir: string, io: CliIo): Promise<DevDatabase> {
  if (env.DATABASE_URL) return { url: env.DATABASE_URL };
  const port = state.postgresPort();
  const server = await PostgresServer.open(state.postgresDataDir, port, { password: "postgres", settings: { max_connections: "300" }, projectDir });
  // One left running by an earlier run that was killed outright is used as it is.
  if (!(await server.running())) await server.start();
  io.stdout(`embedded Postgres on 127.0.0.1:${port} (data in ${state.postgresDataDir})`);
  return { url: server.url, stop: () => server.stop("fast") };
}

/** Migrates the database and returns the default project (created on first start) with its keys. */
export async function prepareDevProject(url: string, encryptionKey: string, clock: Clock, io: CliIo): Promise<ProjectCredentials> {
  const pool = createPool(url, { max: 2, onError: (error) => io.stderr(`database connection: ${error.message}`) });
  try {
    await migrate(pool);
    return await withTransaction(pool, (tx) => ensureDefaultProject(tx, new SecretBox(encryptionKey), clock.now()));
  } catch (error) {
    const described = describeDatabaseError(error, url);
    throw described ? new DevDatabaseError(described.message) : error;
  } finally {
    await pool.end();
  }
}

/** The database cannot be used, said as a sentence with what to do. */
export class DevDatabaseError extends Error {}
