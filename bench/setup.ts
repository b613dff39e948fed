import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createPool, migrate, withTransaction } from "../packages/runtime/src/db/index.ts";
import { ensureDefaultProject, getEnvironment, SecretBox, systemClock, type EngineDeps, type Environment, type ProjectCredentials } from "../packages/runtime/src/engine/index.ts";
import type { Task } from "../packages/runtime/src/sdk/index.ts";
import { tokenCreator } from "../packages/worker/src/execution/create-token.ts";
import { PgBossDispatcher, startBoss } from "../packages/queue/src/index.ts";
import { createWorker, type Worker } from "../packages/worker/src/worker.ts";
import { freePort, startEmbeddedPostgres } from "../scripts/embedded-postgres.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
export const ENCRYPTION_KEY = "bench-encryption-key-0123456789";

export interface BenchDatabase {
  url: string;
  adminUrl: string;
  close(): Promise<void>;
}

/** A fresh database for one scenario (DATABASE_URL's server, else an embedded Postgres). */
export async function benchDatabase(name: string, embedded?: { url: string }): Promise<BenchDatabase> {
  const adminUrl = process.env.DATABASE_URL ?? embedded!.url;
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
  close(): Promise<void>;
}

/** Engine deps + default project; optionally an API child process and an in-process worker. */
export async function benchStack(url: string, options: { tasks?: Task[]; api?: boolean; concurrency?: number; poolMax?: number }): Promise<BenchStack> {
  const pool = createPool(url, { max: options.poolMax ?? 30, applicationName: "svc-bench", onError: (error) => console.error("bench pool:", error.message) });
  await migrate(pool);
  const boss = await startBoss({ connectionString: url, supervise: true, max: 10 });
  const dispatcher = new PgBossDispatcher(boss);
  const engine: EngineDeps = { db: pool, clock: systemClock, dispatcher, secrets: new SecretBox(ENCRYPTION_KEY), apiUrl: "http://localhost" };
  const project = await withTransaction(pool, (tx) => ensureDefaultProject(tx, engine.secrets, systemClock.now()));
  const env = (await getEnvironment(pool, project.environments.dev.id))!;
  let api: ChildProcess | undefined;
  let apiUrl: string | undefined;
  if (options.api) {
    const port = await freePort();
    apiUrl = `http://127.0.0.1:${port}`;
    api = spawn(process.execPath, ["--import", "tsx", process.env.BENCH_API_MAIN ?? "packages/api/src/main.ts"], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url, SVC_ENCRYPTION_KEY: ENCRYPTION_KEY, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", SERVICE_API_URL: apiUrl },
      stdio: ["ignore", "ignore", "inherit"],
    });
    for (let i = 0; i < 200; i++) {
      if (await fetch(`${apiUrl}/readyz`).then((r) => r.ok, () => false)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  let worker: Worker | undefined;
  if (options.tasks) {
    worker = createWorker({
      engine,
      boss,
      dispatcher,
      databaseUrl: url,
      environment: env,
      tasks: options.tasks,
      workerVersion: "bench",
      concurrency: options.concurrency ?? 100,
      createToken: tokenCreator(engine),
      onError: (error, where) => console.error(`worker error (${where}):`, error),
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
    async close() {
      await worker?.drain();
      api?.kill("SIGTERM");
      await boss.stop({ graceful: false, close: true });
      await pool.end();
    },
  };
}
