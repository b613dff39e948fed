import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createPool, migrate, type Pool } from "../packages/runtime/src/db/index.ts";
import type { EngineDeps, Environment, ProjectCredentials } from "../packages/runtime/src/engine/index.ts";
import type { Task } from "../packages/runtime/src/sdk/index.ts";
import { connectTestEngine, TEST_ENCRYPTION_KEY, wakeDispatcher } from "../packages/runtime/src/testing/connect-engine.ts";
import { tokenCreator } from "../packages/worker/src/execution/create-token.ts";
import { createWorker, type Worker } from "../packages/worker/src/worker.ts";
import { startTracing } from "../packages/runtime/src/tracing/start-tracing.ts";
import { freePort, startEmbeddedPostgres } from "../scripts/embedded-postgres.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

export interface BenchDatabase {
  url: string;
  adminUrl: string;
  close(): Promise<void>;
}

/** A fresh database for one scenario (DATABASE_URL's server, else an embedded Postgres). */
export async function benchDatabase(name: string, embedded?: { url: string }): Promise<BenchDatabase> {
  return benchDatabaseOn(process.env.DATABASE_URL ?? embedded!.url, name);
}

/** A fresh database for one scenario on the server of `adminUrl`. */
export async function benchDatabaseOn(adminUrl: string, name: string): Promise<BenchDatabase> {
  const db = `svc_bench_${name}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${db}`;
  return {
    url: u.toString(),
    adminUrl,
    async close() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      await c.end();
    },
  };
}

export async function maybeEmbedded() {
  if (process.env.DATABASE_URL) return undefined;
  return startEmbeddedPostgres(`${ROOT}.svc/bench-pg`, { persistent: false });
}

export interface BenchStack {
  engine: EngineDeps;
  env: Environment;
  project: ProjectCredentials;
  worker?: Worker;
  apiUrl?: string;
  apiPid?: number;
  /** The engine's pool (the worker's main pool). */
  pool: Pool;
  close(): Promise<void>;
}

/** Engine deps + default project; optionally an API child process and an in-process worker. */
export async function benchStack(url: string, options: { tasks?: Task[]; api?: boolean; apiMain?: string; concurrency?: number; poolMax?: number }): Promise<BenchStack> {
  const pool = createPool(url, { max: options.poolMax ?? 30, applicationName: "svc-bench", onError: (error) => console.error("bench pool:", error.message) });
  await migrate(pool);
  const connected = await connectTestEngine({ url, pool }, { dispatcher: wakeDispatcher, apiUrl: "http://localhost" });
  const { engine, env, project } = connected;
  let api: ChildProcess | undefined;
  let apiUrl: string | undefined;
  if (options.api) {
    const started = await spawnApiProcess(url, options.apiMain ?? process.env.BENCH_API_MAIN ?? "packages/api/src/main.ts");
    apiUrl = started.url;
    api = started.child;
  }
  let worker: Worker | undefined;
  // Traces on when OTEL_EXPORTER_OTLP_ENDPOINT is set (the spawned API reads it too), as in `svc worker`.
  const tracing = options.tasks ? await startTracing(process.env, "svc-worker") : null;
  if (options.tasks) {
    worker = createWorker({
      engine,
      databaseUrl: url,
      environment: env,
      tasks: options.tasks,
      workerVersion: "bench",
      concurrency: options.concurrency ?? 100,
      createToken: tokenCreator(engine),
      onError: (error, where) => console.error(`worker error (${where}):`, error),
      tracer: tracing?.tracer ?? null,
    });
    await worker.start();
  }
  return {
    engine,
    env,
    project,
    worker,
    apiUrl,
    apiPid: api?.pid,
    pool,
    async close() {
      await worker?.drain();
      await tracing?.shutdown();
      api?.kill("SIGTERM");
      await connected.close();
      await pool.end();
    },
  };
}

/**
 * An API process (`entry`, from the repository root) on a free port against `url`, once /readyz
 * answers; `env` adds to (or overrides) its environment.
 */
export async function spawnApiProcess(url: string, entry: string, env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url, SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", SERVICE_API_URL: apiUrl, ...env },
    stdio: ["ignore", process.env.BENCH_API_LOG ? "inherit" : "ignore", "inherit"],
  });
  for (let i = 0; i < 200; i++) {
    if (await fetch(`${apiUrl}/readyz`).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: apiUrl, child };
}
