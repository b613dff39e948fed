import { readFileSync } from "node:fs";
import { stringOption, UsageError, type CommandArgs } from "./command.ts";

/**
 * A JSON value given inline (`--payload '{"a":1}'`) or as a file (`--payload-file data.json`,
 * `-` for standard input); undefined when neither is given. Text that is not JSON is a UsageError
 * naming the option: a payload is never sent as a string by mistake.
 */
export function jsonInput(args: CommandArgs, name: string): unknown {
  // Standard input can be read once: validate() and run() share what was read.
  const read = (readInputs.get(args) ?? readInputs.set(args, new Map()).get(args))!;
  if (!read.has(name)) read.set(name, readJsonInput(args, name));
  return read.get(name);
}

const readInputs = new WeakMap<CommandArgs, Map<string, unknown>>();

function readJsonInput(args: CommandArgs, name: string): unknown {
  const inline = stringOption(args, name);
  const file = stringOption(args, `${name}-file`);
  if (inline !== undefined && file !== undefined) throw new UsageError(`pass --${name} or --${name}-file, not both`);
  if (inline !== undefined) return parse(inline, `--${name}`);
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    throw new UsageError(`--${name}-file ${file}: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}`);
  }
  return parse(text, `--${name}-file ${file}`);
}

function parse(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${where} is not JSON (${(error as Error).message}); a string is written with its quotes: '"text"'`);
  }
}

/** A JSON option that must hold an object (metadata). */
export function jsonObjectInput(args: CommandArgs, name: string): Record<string, unknown> | undefined {
  const value = jsonInput(args, name);
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new UsageError(`--${name} must be a JSON object, e.g. '{"source":"cli"}'`);
  return value as Record<string, unknown>;
}
