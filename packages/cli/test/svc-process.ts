import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
// tsx by path: a folder outside the repository that a test runs svc in cannot resolve it.
export const TSX = import.meta.resolve("tsx");
/** How long `until` waits: under a test's own timeout, so that the failure shows svc's output. */
const UNTIL_MS = 25_000;
const RUNTIME = fileURLToPath(new URL("../../runtime", import.meta.url));

/** A `svc …` process, its output as it comes, and a way to wait for a line of it. */
export interface SvcProcess {
  child: ChildProcess;
  output(): string;
  /**
   * Resolves once the output matches `pattern` `times` times (the last match); rejects if svc exits
   * first, or after `ms` (default `UNTIL_MS`) with the output's tail (a test's own timeout would say nothing of it).
   */
  until(pattern: RegExp, times?: number, ms?: number): Promise<RegExpMatchArray>;
  exited: Promise<number | string>;
  /** SIGTERM (a drain), then the exit. */
  stop(): Promise<number | string>;
}

export function startSvc(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): SvcProcess {
  // A process group of its own, as a terminal gives a job: svc dev stops when the leader of its
  // group goes away (pnpm's way of stopping it), which the test runner's group leader may do first.
  const child = spawn(process.execPath, ["--import", TSX, MAIN, ...args], {
    detached: true,
    cwd: options.cwd,
    env: { ...process.env, LOG_LEVEL: "info", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const listeners = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    out += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  return {
    child,
    output: () => out,
    exited,
    until(pattern, times = 1, ms = UNTIL_MS) {
      const global = new RegExp(pattern.source, pattern.flags.includes("g") ? pattern.flags : pattern.flags + "g");
      const found = () => {
        const matches = [...out.matchAll(global)];
        return matches.length >= times ? matches[times - 1]! : undefined;
      };
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`svc did not print ${pattern}${times > 1 ? ` ${times} times` : ""} in ${ms} ms; output:\n${out.slice(-4000)}`));
        }, ms);
        const check = () => {
          const match = found();
          if (!match) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(match);
        };
        listeners.add(check);
        check();
        void exited.then((code) => {
          if (!listeners.has(check)) return;
          listeners.delete(check);
          clearTimeout(timer);
          reject(new Error(`svc exited (${code}) before printing ${pattern}${times > 1 ? ` ${times} times` : ""}; output:\n${out.slice(-4000)}`));
        });
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}

/** A project folder outside the repository whose task code imports @svc/runtime, as a user's does. */
export interface DevProject {
  dir: string;
  configPath: string;
  write(file: string, content: string): string;
  path(file: string): string;
  close(): void;
}

export function makeProject(files: Record<string, string>): DevProject {
  const dir = mkdtempSync(join(tmpdir(), "svc-project-"));
  const path = (file: string) => join(dir, file);
  const write = (file: string, content: string) => {
    mkdirSync(dirname(path(file)), { recursive: true });
    writeFileSync(path(file), content);
    return path(file);
  };
  write("package.json", JSON.stringify({ name: "dev-loop", private: true, type: "module" }));
  mkdirSync(path("node_modules/@svc"), { recursive: true });
  symlinkSync(RUNTIME, path("node_modules/@svc/runtime"));
  write("svc.config.ts", `import { defineConfig } from "@svc/runtime";\n\nexport default defineConfig({ dirs: ["./src/tasks"] });\n`);
  for (const [file, content] of Object.entries(files)) write(file, content);
  return { dir, configPath: path("svc.config.ts"), write, path, close: () => rmSync(dir, { recursive: true, force: true }) };
}
