import { spawn, type ChildProcess } from "node:child_process";
import type { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import type { WatchedCode } from "./watch.ts";

/** What `svc api` and `svc worker` send their parent over IPC once they serve. */
export interface ReadyMessage {
  type: "svc:ready";
  service: "api" | "worker";
  workerVersion?: string;
  taskIds?: string[];
  /** A worker under svc dev: the code it loaded, which the dev loop watches. */
  code?: LoadedCode;
}

/** What a worker under svc dev loaded (files outside node_modules) and the task folders of its config. */
export interface LoadedCode extends WatchedCode {
  /** False on a Node without module.registerHooks (before 22.15): `files` lacks the ES modules then. */
  seesEsModules: boolean;
}

/** What `svc worker` sends `svc dev` when its tasks did not load: the code it got to, to watch for the fix. */
export interface LoadFailedMessage {
  type: "svc:load-failed";
  code: LoadedCode;
}

export function isReadyMessage(message: unknown): message is ReadyMessage {
  return typeof message === "object" && message !== null && (message as { type?: unknown }).type === "svc:ready";
}

export function isLoadFailedMessage(message: unknown): message is LoadFailedMessage {
  return typeof message === "object" && message !== null && (message as { type?: unknown }).type === "svc:load-failed";
}

export interface ServiceChild {
  readonly name: string;
  readonly process: ChildProcess;
  /** Resolves with the exit code (or signal name) once the process has ended. */
  readonly exited: Promise<number | string>;
  /** Resolves when the process says it serves; rejects if it exits first. */
  readonly ready: Promise<ReadyMessage>;
  alive(): boolean;
  /** Asks it to stop: the first SIGTERM drains, a second one exits at once. */
  terminate(): void;
}

// This CLI's own entry, run again for each child: the built JavaScript, or from source under tsx.
const FROM_SOURCE = import.meta.url.endsWith(".ts");
const ENTRY = fileURLToPath(new URL(FROM_SOURCE ? "../main.ts" : "../main.js", import.meta.url));

/**
 * Starts `svc <command>` as a child in a process group of its own, so that the terminal's Ctrl-C
 * reaches only the parent, which passes on exactly one SIGTERM. Its stdout goes to `stdout` when
 * given (a log formatter), else to the parent's, as its stderr does.
 */
export function spawnService(name: string, command: "api" | "worker", env: NodeJS.ProcessEnv, stdout?: Writable): ServiceChild {
  const loader = FROM_SOURCE ? ["--import", import.meta.resolve("tsx")] : [];
  const child = spawn(process.execPath, [...loader, ENTRY, command], { env, stdio: ["ignore", stdout ? "pipe" : "inherit", "inherit", "ipc"], detached: true });
  if (stdout) child.stdout!.pipe(stdout);
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  const ready = new Promise<ReadyMessage>((resolve, reject) => {
    child.on("message", (message) => {
      if (isReadyMessage(message)) resolve(message);
    });
    // Once the IPC channel is closed too: the messages the child sent before it exited have arrived.
    const channelClosed = new Promise<void>((resolve) => (child.connected ? child.once("disconnect", () => resolve()) : resolve()));
    void Promise.all([exited, channelClosed]).then(([code]) => reject(new Error(`${name} exited (${code}) before it was ready`)));
  });
  ready.catch(() => {}); // whoever waits for it sees the rejection; nobody need wait
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    process: child,
    exited,
    ready,
    alive,
    terminate: () => {
      if (alive()) child.kill("SIGTERM");
    },
  };
}
