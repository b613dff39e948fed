import type { ApiClient } from "@svc/runtime";

/** An option of a command: its parseArgs type, and one line for `--help`. */
export interface OptionSpec {
  type: "string" | "boolean";
  multiple?: boolean;
  /** `--tag <tag>` in the help; booleans show as `--wait`. */
  value?: string;
  help: string;
}

export interface CommandArgs {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** A command's answer: `json` printed with --json, `text` otherwise; `exitCode` 0 unless it says so. */
export interface CommandResult {
  json: unknown;
  text: string;
  exitCode?: number;
}

/** What a command gets: a management client for the resolved API and key. */
export interface CommandContext {
  client: ApiClient;
  /** The credential it uses: a secret key (`svc_dev_…`), or a personal access token (`svc_pat_…`). */
  credential: string;
  /** The environment `svc` runs in (SVC_CONFIG for a local replay). */
  env: NodeJS.ProcessEnv;
}

/** A command of `svc` that talks to svc's HTTP API (runs, tokens). */
export interface ApiCommand {
  /** "runs list", "tokens complete" … */
  name: string;
  /** Names of its positional arguments, all required. */
  positionals?: string[];
  description: string;
  options?: Record<string, OptionSpec>;
  /** Lines shown under "examples:" in `--help`. */
  examples?: string[];
  /** Checks arguments before any request; throw UsageError for exit code 2. */
  validate?(args: CommandArgs): void;
  run(ctx: CommandContext, args: CommandArgs): Promise<CommandResult>;
}

/** Bad command-line usage: exit code 2, with the command's usage. */
export class UsageError extends Error {}

/** `runs show <run id> [options] [--json]`: a command as `svc --help` lists it. */
export function usageLine(command: ApiCommand): string {
  return [command.name, ...(command.positionals ?? []).map((p) => `<${p}>`), ...(command.options ? ["[options]"] : []), "[--json]"].join(" ");
}

/** `runs list [--status <status>] …`: the one-line usage of a command. */
export function usageOf(command: ApiCommand): string {
  const positionals = (command.positionals ?? []).map((p) => `<${p}>`);
  const options = Object.entries(command.options ?? {}).map(([name, spec]) => `[--${name}${spec.type === "string" ? ` <${spec.value ?? name}>` : ""}]`);
  return [command.name, ...positionals, ...options, "[--json]"].join(" ");
}

/** `svc runs list --help`. */
export function helpOf(command: ApiCommand): string {
  const rows = Object.entries(command.options ?? {}).map(([name, spec]) => [`--${name}${spec.type === "string" ? ` <${spec.value ?? name}>` : ""}`, spec.help + (spec.multiple ? " (repeat it, or separate with commas)" : "")]);
  rows.push(["--json", "print the answer as JSON (errors too: {\"error\": …})"]);
  const width = Math.max(...rows.map(([flag]) => flag!.length));
  return [
    `usage: svc ${[command.name, ...(command.positionals ?? []).map((p) => `<${p}>`)].join(" ")} [options]`,
    command.description,
    "",
    "options:",
    ...rows.map(([flag, help]) => `  ${flag!.padEnd(width)}  ${help}`),
    ...(command.examples?.length ? ["", "examples:", ...command.examples.map((e) => `  ${e}`)] : []),
  ].join("\n");
}

/** A string option's values: repeated (`--tag a --tag b`) or comma-separated (`--tag a,b`). */
export function listOption(args: CommandArgs, name: string): string[] | undefined {
  const value = args.values[name];
  if (value === undefined || typeof value === "boolean") return undefined;
  const parts = (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v.length > 0);
  return parts.length > 0 ? parts : undefined;
}

/** A single string option, or undefined. */
export function stringOption(args: CommandArgs, name: string): string | undefined {
  const value = args.values[name];
  return typeof value === "string" ? value : undefined;
}

/** A whole number option in [min, max], or undefined; anything else is a UsageError. */
export function integerOption(args: CommandArgs, name: string, min: number, max: number): number | undefined {
  const value = stringOption(args, name);
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!/^\d+$/.test(value.trim()) || number < min || number > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, not "${value}"`);
  return number;
}
