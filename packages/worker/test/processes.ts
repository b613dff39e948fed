import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { TEST_ENCRYPTION_KEY } from "./harness.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves with the exit code (or signal) once the process ended. */
  exited: Promise<number | string>;
  /** Resolves when the worker logged that it started. */
  ready: Promise<void>;
  output: () => string;
}

/** Starts a real worker process (the same entry point operators run) against a test database. */
export function spawnWorker(databaseUrl: string, secretKey: string, configPath: string, env: Record<string, string> = {}): WorkerProcess {
  // node itself with the tsx loader (not the tsx CLI, which forks a child that SIGKILL would orphan).
  const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      SERVICE_SECRET_KEY: secretKey,
      SVC_CONFIG: configPath,
      LOG_LEVEL: "info",
      WORKER_CONCURRENCY: "4",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let onReady: () => void;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  const collect = (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes("svc worker started")) onReady();
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  return {
    child,
    exited,
    ready: Promise.race([ready, exited.then((code) => Promise.reject(new Error(`worker exited early (${code}):\n${out}`)))]),
    output: () => out,
  };
}

export const CRASH_FIXTURE = fileURLToPath(new URL("./fixtures/crash/svc.config.ts", import.meta.url));
