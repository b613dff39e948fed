import { createPool, migrate } from "@svc/runtime/db";
import { connectTestEngine } from "@svc/runtime/testing";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { OwnPostgres } from "../../../test/own-postgres.ts";
import { OUTAGE_FIXTURE, spawnApi, spawnWorker, type ServiceProcess } from "./processes.ts";

/**
 * svc as operators run it, on a Postgres of the test's own (which the test may stop, start and
 * crash): an API process and worker processes with the outage fixture's tasks.
 */
export interface OwnCluster {
  pg: OwnPostgres;
  base: string;
  secretKey: string;
  api: ServiceProcess;
  workers: ServiceProcess[];
  /** Starts another API process on the same port (after the last one was killed). */
  restartApi(): Promise<ServiceProcess>;
  /** Starts another worker process. */
  addWorker(): Promise<ServiceProcess>;
  /** Every process started, in order (killed ones included). */
  all(): ServiceProcess[];
  close(): Promise<void>;
}

export async function startOwnCluster(options: { workers: number; workerEnv?: Record<string, string> }): Promise<OwnCluster> {
  const pg = await OwnPostgres.create();
  const pool = createPool(pg.url, { max: 2, onError: () => {} });
  await migrate(pool);
  const { project } = await connectTestEngine({ url: pg.url, pool });
  await pool.end();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const secretKey = project.environments.dev.secretKey;
  const started: ServiceProcess[] = [];
  const launch = async (process: ServiceProcess) => {
    started.push(process);
    await process.ready;
    return process;
  };
  const newApi = () => launch(spawnApi(pg.url, port, { SERVICE_API_URL: base }));
  const newWorker = () => launch(spawnWorker(pg.url, secretKey, OUTAGE_FIXTURE, { SERVICE_API_URL: base, ...options.workerEnv }));
  const [api, ...workers] = await Promise.all([newApi(), ...Array.from({ length: options.workers }, newWorker)]);
  return {
    pg,
    base,
    secretKey,
    api: api!,
    workers,
    restartApi: newApi,
    addWorker: newWorker,
    all: () => started,
    async close() {
      for (const p of started) p.child.kill("SIGKILL");
      await Promise.all(started.map((p) => p.exited));
      await pg.destroy();
    },
  };
}

export interface Answer {
  status: number;
  body: any;
  retryAfter: string | null;
  contentType: string | null;
  what: string;
}

/** An HTTP client for the cluster's API that keeps every answer it got, for the test to judge. */
export function apiClient(cluster: { base: string; secretKey: string }) {
  const answers: Answer[] = [];
  const headers = { authorization: `Bearer ${cluster.secretKey}`, "content-type": "application/json" };
  /** One request; a refused or reset connection throws. */
  async function call(method: string, path: string, body?: unknown): Promise<Answer> {
    const response = await fetch(cluster.base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    const answer = { status: response.status, body: parsed, retryAfter: response.headers.get("retry-after"), contentType: response.headers.get("content-type"), what: `${method} ${path}` };
    answers.push(answer);
    return answer;
  }
  /**
   * Repeats an idempotent request until it succeeds, through any number of 503s (and, with
   * `whileRefused`, of refused connections: the API process is being restarted).
   */
  async function untilOk(method: string, path: string, body?: unknown, options: { whileRefused?: boolean } = {}): Promise<any> {
    for (;;) {
      const answer = await call(method, path, body).catch((error: unknown) => {
        if (options.whileRefused) return null;
        throw error;
      });
      if (answer && answer.status < 300) return answer.body;
      if (answer && answer.status !== 503) throw new Error(`${method} ${path} → ${answer.status} ${JSON.stringify(answer.body)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  /** Answers that were neither a success nor a 503 JSON error with Retry-After. */
  const failures = () => answers.filter((a) => a.status >= 300 && !(a.status === 503 && typeof a.body?.error === "string" && a.retryAfter && a.contentType?.startsWith("application/json")));
  return { answers, call, untilOk, failures };
}
