import type { ParseArgsConfig } from "node:util";
import type { MigrateResult, Queryable } from "@svc/runtime/db";
import type { SecretBox } from "@svc/runtime/engine";

/** What every command gets: one transaction, the server key, the time, what the start-up migration applied. */
export interface CommandContext {
  db: Queryable;
  box: SecretBox;
  now: Date;
  migrated: MigrateResult;
}

export interface CommandArgs {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** A command's answer: `json` is printed with --json, `text` otherwise. */
export interface CommandResult {
  json: unknown;
  text: string;
}

export interface Command {
  /** How it is invoked: "init", "orgs create" … */
  name: string;
  /** One line: arguments and options. */
  usage: string;
  description: string;
  options?: NonNullable<ParseArgsConfig["options"]>;
  /** Names of the positional arguments, all required. */
  positionals?: string[];
  /** Options that must be given. */
  required?: string[];
  /** Checks arguments before any database work; throw UsageError to exit with code 2. */
  validate?(args: CommandArgs): void;
  run(ctx: CommandContext, args: CommandArgs): Promise<CommandResult>;
}

/** Bad command-line usage: exit code 2 with the message and the command's usage line. */
export class UsageError extends Error {}

/** A string option the command declared `required` (validated before run). */
export function stringOption(args: CommandArgs, name: string): string {
  const value = args.values[name];
  if (typeof value !== "string") throw new UsageError(`--${name} is required`);
  return value;
}

/** Aligned two-column text: `  dev      svc_dev_…`. */
export function table(rows: [string, string][], indent = "  "): string {
  const width = Math.max(0, ...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${indent}${k.padEnd(width)}  ${v}`).join("\n");
}
