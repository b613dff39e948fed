import { parseArgs } from "node:util";
import { createPool, describeDatabaseError, migrate, redactDatabaseUrl, withTransaction } from "@svc/runtime/db";
import { SecretBox, SvcError, systemClock, ValidationError, type Clock } from "@svc/runtime/engine";
import { UsageError, type Command, type CommandArgs } from "./command.ts";
import { COMMANDS } from "./commands/index.ts";
import { ConfigError, parseCliConfig } from "./config.ts";

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Exit codes: 0 done, 1 the operation failed (not found, conflict, database), 2 bad usage. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

function helpText(): string {
  const lines = COMMANDS.map((c) => `  ${c.usage}\n      ${c.description}`);
  return [
    "Usage: svc <command> [options]",
    "",
    "Commands:",
    ...lines,
    "",
    "Every command accepts --json (machine-readable output on stdout).",
    "Configuration: DATABASE_URL and SVC_ENCRYPTION_KEY, else .svc/runtime.json (written by `svc dev`).",
  ].join("\n");
}

/** `svc <group> --help`: each command of the group with its options. */
function groupHelp(group: Command[]): string {
  return ["Commands:", ...group.map((c) => `  svc ${c.usage}\n      ${c.description}`), "", "svc <command> --help says more about one."].join("\n");
}

function findCommand(argv: string[]): Command | undefined {
  const two = argv.slice(0, 2).join(" ");
  return COMMANDS.find((c) => c.name === two) ?? COMMANDS.find((c) => c.name === argv[0]);
}

/** Parses and checks a command's arguments; every problem is a UsageError. */
function parseCommandArgs(command: Command, rest: string[]): CommandArgs & { help: boolean } {
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...command.options, json: { type: "boolean" }, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const args: CommandArgs = { values: parsed.values as CommandArgs["values"], positionals: parsed.positionals };
  if (parsed.values.help) return { ...args, help: true };
  const expected = command.positionals ?? [];
  if (args.positionals.length < expected.length) throw new UsageError(`missing <${expected[args.positionals.length]}>`);
  if (args.positionals.length > expected.length) throw new UsageError(`unexpected argument "${args.positionals[expected.length]}"`);
  for (const name of command.required ?? []) {
    const value = args.values[name];
    if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required`);
  }
  command.validate?.(args);
  return { ...args, help: false };
}

/**
 * Runs one CLI invocation: parse arguments (exit 2 on misuse), read config, migrate, run the
 * command in one transaction, print text or --json. Returns the exit code.
 */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv, io: CliIo, clock: Clock = systemClock): Promise<number> {
  const json = argv.includes("--json");
  const fail = (code: number, message: string, usage?: string) => {
    io.stderr(`error: ${message}${usage ? `\nusage: svc ${usage}` : ""}`);
    if (json) io.stdout(JSON.stringify({ error: message }));
    return code;
  };

  if (argv.length === 0 || ["--help", "-h", "help"].includes(argv[0]!)) {
    (argv.length === 0 ? io.stderr : io.stdout)(helpText());
    return argv.length === 0 ? EXIT.usage : EXIT.ok;
  }
  const command = findCommand(argv);
  if (!command) {
    // `svc keys`, `svc keys --help`: the group's commands.
    const group = COMMANDS.filter((c) => c.name.startsWith(`${argv[0]} `));
    if (group.length > 0) {
      const asksHelp = argv.length === 1 || ["--help", "-h", "help"].includes(argv[1]!);
      if (argv.length > 1 && !asksHelp) return fail(EXIT.usage, `unknown command "${argv.slice(0, 2).join(" ")}"; svc ${argv[0]} has: ${group.map((c) => c.name.split(" ")[1]).join(", ")}`);
      (argv.length === 1 ? io.stderr : io.stdout)(groupHelp(group));
      return argv.length === 1 ? EXIT.usage : EXIT.ok;
    }
    return fail(EXIT.usage, `unknown command "${argv.slice(0, 2).join(" ")}"; run svc --help`);
  }

  let args: CommandArgs & { help: boolean };
  try {
    args = parseCommandArgs(command, argv.slice(command.name.split(" ").length));
  } catch (error) {
    if (error instanceof UsageError) return fail(EXIT.usage, error.message, command.usage);
    throw error;
  }
  if (args.help) {
    io.stdout(`usage: svc ${command.usage}\n${command.description}`);
    return EXIT.ok;
  }

  let config;
  try {
    config = parseCliConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return fail(EXIT.failed, error.message);
    throw error;
  }
  const { databaseUrl } = config;
  // A database that is down, missing or refuses us: one sentence saying what to do, never the password.
  const databaseError = (error: unknown) => describeDatabaseError(error, databaseUrl)?.message ?? redactDatabaseUrl((error as Error)?.message || String(error), databaseUrl);
  const pool = createPool(databaseUrl, { max: 2, applicationName: "svc-cli", onError: (error) => io.stderr(`database connection: ${databaseError(error)}`) });
  try {
    const migrated = await migrate(pool);
    const box = new SecretBox(config.encryptionKey);
    const result = await withTransaction(pool, (db) => command.run({ db, box, now: clock.now(), migrated }, args));
    io.stdout(json ? JSON.stringify(result.json, null, 2) : result.text);
    return EXIT.ok;
  } catch (error) {
    // Engine validation of an argument (a slug, an email, a branch name) is still bad usage.
    if (error instanceof ValidationError || error instanceof UsageError) return fail(EXIT.usage, error.message, command.usage);
    if (error instanceof SvcError) return fail(EXIT.failed, error.message);
    return fail(EXIT.failed, databaseError(error));
  } finally {
    await pool.end();
  }
}
