import { parseArgs } from "node:util";
import { ApiClient, ApiConnectionError, ApiError, BadRequestError } from "@svc/runtime";
import type { CliIo } from "../io.ts";
import { helpOf, UsageError, usageOf, type ApiCommand, type CommandArgs } from "./command.ts";
import { API_COMMANDS } from "./index.ts";
import { resolveApiTarget, TargetError } from "./target.ts";

/** Exit codes, as the operator commands': 0 done, 1 the operation failed, 2 bad usage. */
const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** `svc runs --help`: the group's commands. */
function groupHelp(group: string): string {
  const commands = API_COMMANDS.filter((c) => c.name.startsWith(`${group} `));
  return [
    "Commands:",
    ...commands.map((c) => `  svc ${c.name}${(c.positionals ?? []).map((p) => ` <${p}>`).join("")} [options]\n      ${c.description}`),
    "",
    "svc <command> --help lists its options. They talk to svc's API: SERVICE_API_URL and SERVICE_SECRET_KEY, else the .svc/runtime.json svc dev writes.",
  ].join("\n");
}

function parse(command: ApiCommand, rest: string[]): CommandArgs & { help: boolean } {
  const options: NonNullable<Parameters<typeof parseArgs>[0]>["options"] = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } };
  for (const [name, spec] of Object.entries(command.options ?? {})) options[name] = { type: spec.type, ...(spec.multiple ? { multiple: true } : {}) };
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options, allowPositionals: true, allowNegative: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const args = { values: parsed.values as CommandArgs["values"], positionals: parsed.positionals, help: parsed.values.help === true };
  if (args.help) return args;
  // --no-<option> is for booleans only (--no-test); `--no-json` and the like mean nothing.
  for (const [name, value] of Object.entries(parsed.values)) {
    if (value === false && command.options?.[name]?.type !== "boolean") throw new UsageError(`Unknown option '--no-${name}'`);
  }
  const expected = command.positionals ?? [];
  if (args.positionals.length < expected.length) throw new UsageError(`missing <${expected[args.positionals.length]}>`);
  if (args.positionals.length > expected.length) throw new UsageError(`unexpected argument "${args.positionals[expected.length]}"`);
  for (const value of args.positionals) if (value.trim() === "") throw new UsageError(`<${expected[0]}> is empty`);
  command.validate?.(args);
  return args;
}

/** An error of a request as one line: what the API said, or that it could not be reached. */
function requestProblem(error: unknown, baseURL: string): string | undefined {
  if (error instanceof ApiConnectionError) return `cannot reach svc's API at ${baseURL} (${error.message}): is svc dev (or svc api) running? SERVICE_API_URL says where it listens`;
  if (error instanceof ApiError) return `${error.message} (HTTP ${error.status})`;
  return undefined;
}

/**
 * `svc runs …` and `svc tokens …`: parse (exit 2 on misuse), resolve the API and credential, make
 * the request with svc's management client, print text or --json. Returns the exit code.
 */
export async function runApiCommand(argv: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  const json = argv.includes("--json");
  const fail = (code: number, message: string, usage?: string) => {
    io.stderr(`error: ${message}${usage ? `\nusage: svc ${usage}` : ""}`);
    if (json) io.stdout(JSON.stringify({ error: message }));
    return code;
  };
  const [group, sub] = argv;
  if (sub === undefined || ["--help", "-h", "help"].includes(sub)) {
    (sub === undefined ? io.stderr : io.stdout)(groupHelp(group!));
    return sub === undefined ? EXIT.usage : EXIT.ok;
  }
  const command = API_COMMANDS.find((c) => c.name === `${group} ${sub}`);
  if (!command) {
    const names = API_COMMANDS.filter((c) => c.name.startsWith(`${group} `)).map((c) => c.name.split(" ")[1]);
    return fail(EXIT.usage, `unknown command "${group} ${sub}"; svc ${group} has: ${names.join(", ")}`);
  }

  let args: CommandArgs & { help: boolean };
  try {
    args = parse(command, argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError) return fail(EXIT.usage, error.message, usageOf(command));
    throw error;
  }
  if (args.help) {
    io.stdout(helpOf(command));
    return EXIT.ok;
  }

  let target;
  try {
    target = resolveApiTarget(env);
  } catch (error) {
    if (error instanceof TargetError) return fail(EXIT.failed, error.message);
    throw error;
  }
  // A person waits at the terminal: a down API is said after two quick tries, not a minute of backoff.
  const client = new ApiClient({
    secretKey: target.credential,
    baseURL: target.baseURL,
    previewBranch: target.previewBranch,
    requestOptions: { retry: { maxAttempts: 2, minTimeoutInMs: 200, maxTimeoutInMs: 1000 } },
  });
  try {
    const result = await command.run({ client, credential: target.credential, env }, args);
    io.stdout(json ? JSON.stringify(result.json, null, 2) : result.text);
    return result.exitCode ?? EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) return fail(EXIT.usage, error.message, usageOf(command));
    // The API refusing the arguments as sent (400) is bad usage too.
    if (error instanceof BadRequestError) return fail(EXIT.usage, requestProblem(error, target.baseURL)!, usageOf(command));
    return fail(EXIT.failed, requestProblem(error, target.baseURL) ?? (error instanceof Error ? error.message : String(error)));
  }
}
