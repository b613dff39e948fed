import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { TEST_ENCRYPTION_KEY } from "./harness.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const API_MAIN = fileURLToPath(new URL("../../api/src/main.ts", import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  /** Resolves with the exit code (or signal) once the process ended. */
  exited: Promise<number | string>;
  /** Resolves when the process logged that it started. */
  ready: Promise<void>;
  output: () => string;
}
export type WorkerProcess = ServiceProcess;

/** Starts a real svc process (an entry point operators run), ready once it logs `readyText`. */
function spawnService(entry: string, readyText: string, env: Record<string, string>): ServiceProcess {
  // node itself with the tsx loader (not the tsx CLI, which forks a child that SIGKILL would orphan).
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: ROOT,
    env: { ...process.env, SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let onReady: () => void;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  const collect = (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes(readyText)) onReady();
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  const name = entry === API_MAIN ? "api" : "worker";
  return {
    child,
    exited,
    ready: Promise.race([ready, exited.then((code) => Promise.reject(new Error(`${name} exited early (${code}):\n${out}`)))]),
    output: () => out,
  };
}

/** Starts a real worker process against a test database. */
export function spawnWorker(databaseUrl: string, secretKey: string, configPath: string, env: Record<string, string> = {}): WorkerProcess {
  return spawnService(WORKER_MAIN, "svc worker started", {
    DATABASE_URL: databaseUrl,
    SERVICE_SECRET_KEY: secretKey,
    SVC_CONFIG: configPath,
    WORKER_CONCURRENCY: "4",
    ...env,
  });
}

/** Starts a real API process against a test database, listening on `port` on loopback. */
export function spawnApi(databaseUrl: string, port: number, env: Record<string, string> = {}): ServiceProcess {
  return spawnService(API_MAIN, "svc api listening", { DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1", ...env });
}

export const CRASH_FIXTURE = fileURLToPath(new URL("./fixtures/crash/svc.config.ts", import.meta.url));
export const OUTAGE_FIXTURE = fileURLToPath(new URL("./fixtures/outage/svc.config.ts", import.meta.url));
export const RATE_FIXTURE = fileURLToPath(new URL("./fixtures/rate/svc.config.ts", import.meta.url));
