import { execFile, spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { freePort } from "../../scripts/embedded-postgres.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MAIN = join(ROOT, "packages/cli/src/main.ts");

/** `svc dev` with the examples/hello project on a given database, as a newcomer runs `pnpm start`. */
export interface SvcDev {
  url: string;
  devKey: string;
  output(): string;
  /** Runs an operator command (`svc access …`) against the same database, as `pnpm svc …` would. */
  cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  stop(): Promise<void>;
}

export async function until(predicate: () => boolean | Promise<boolean>, explain: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out; output:\n${explain().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startSvcDev(databaseUrl: string, stateDir: string): Promise<SvcDev> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl, SVC_STATE_DIR: stateDir, PORT: String(port), LOG_LEVEL: "info" };
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", MAIN, "dev", "--config", join(ROOT, "examples/hello/svc.config.ts")], { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  await until(() => out.includes("svc worker started") && out.includes("svc api listening"), () => out, 90_000);
  const devKey = /dev key\s+(svc_dev_\S+)/.exec(out)![1]!;
  return {
    url: `http://127.0.0.1:${port}`,
    devKey,
    output: () => out,
    cli: (args) =>
      new Promise((resolve) => {
        execFile(process.execPath, ["--import", "tsx", MAIN, ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: "", SVC_STATE_DIR: stateDir }, timeout: 60_000 }, (error, stdout, stderr) => {
          resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
        });
      }),
    async stop() {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {
        return;
      }
      await exited;
    },
  };
}
