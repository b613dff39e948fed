import { freePort } from "../../scripts/embedded-postgres.ts";
import { TEST_ENCRYPTION_KEY } from "../../packages/runtime/src/testing/index.ts";
import { startTestEngine, type TestEngine } from "../../packages/runtime/src/testing/index.ts";
import { spawnApi, spawnWorker, type ServiceProcess } from "../../packages/worker/test/processes.ts";

/**
 * svc as a reader of the docs runs it: an API process and a worker process (with the example
 * tasks and the docs' task blocks, from `configPath`) on a database of the test's own, with the
 * default project. `env` is what the docs' examples run with.
 */
export interface LiveSvc {
  te: TestEngine;
  apiUrl: string;
  secretKey: string;
  projectRef: string;
  api: ServiceProcess;
  worker: ServiceProcess;
  /** SERVICE_API_URL and SERVICE_SECRET_KEY as the docs use them, and the database for `pnpm svc`. */
  env: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

export async function startLiveSvc(configPath: string): Promise<LiveSvc> {
  const te = await startTestEngine();
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const secretKey = te.project.environments.dev.secretKey;
  const api = spawnApi(te.db.url, port, { SERVICE_API_URL: apiUrl });
  const worker = spawnWorker(te.db.url, secretKey, configPath, { SERVICE_API_URL: apiUrl });
  const started = [api, worker];
  const stop = async () => {
    for (const p of started) p.child.kill("SIGKILL");
    await Promise.all(started.map((p) => p.exited));
  };
  try {
    await Promise.all([api.ready, worker.ready]);
  } catch (error) {
    await stop();
    await te.close();
    throw error;
  }
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SERVICE_API_URL: apiUrl,
    SERVICE_SECRET_KEY: secretKey,
    // `pnpm svc` talks to the database directly.
    DATABASE_URL: te.db.url,
    SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
  };
  for (const name of ["SERVICE_PREVIEW_BRANCH", "TRIGGER_SECRET_KEY", "TRIGGER_API_URL", "TRIGGER_PREVIEW_BRANCH", "SVC_RUNTIME_FILE"]) delete env[name];
  return {
    te,
    apiUrl,
    secretKey,
    projectRef: te.project.projectRef,
    api,
    worker,
    env,
    async close() {
      await stop();
      await te.close();
    },
  };
}
