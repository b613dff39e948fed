import { ValidationError } from "../../errors.ts";

/** Names the runtime itself sets in a run's process.env; a variable may not shadow them. */
export const RESERVED_VARIABLE_NAMES = ["SERVICE_SECRET_KEY", "SERVICE_API_URL"] as const;

export const MAX_VARIABLE_NAME_LENGTH = 256;
/** 64 KiB per value: far above any real configuration value, small enough to keep rows cheap. */
export const MAX_VARIABLE_VALUE_BYTES = 64 * 1024;
export const MAX_VARIABLES_PER_UPLOAD = 1000;

/** What a secret value reads as in list and retrieve responses. */
export const REDACTED_VALUE = "<redacted>";

const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Why a variable name is refused, or null when it is fine. Pure; used for single and bulk writes. */
export function variableNameProblem(name: string): string | null {
  if ((RESERVED_VARIABLE_NAMES as readonly string[]).includes(name)) {
    return `${name} is reserved: svc sets it for every run itself`;
  }
  if (name.length > MAX_VARIABLE_NAME_LENGTH) return `Variable name must be at most ${MAX_VARIABLE_NAME_LENGTH} characters`;
  if (!NAME_PATTERN.test(name)) {
    return `Invalid variable name "${name}": use letters, digits and underscores, not starting with a digit`;
  }
  return null;
}

export function variableValueProblem(name: string, value: string): string | null {
  if (Buffer.byteLength(value, "utf8") > MAX_VARIABLE_VALUE_BYTES) return `Value of ${name} is larger than ${MAX_VARIABLE_VALUE_BYTES} bytes`;
  // A run would read something else: process.env ends a value at a NUL, and UTF-8 turns half a
  // surrogate pair into U+FFFD.
  if (value.includes("\u0000")) return `Value of ${name} contains a NUL character, which an environment variable cannot hold`;
  if (!value.isWellFormed()) return `Value of ${name} is not valid Unicode (half a surrogate pair)`;
  return null;
}

/** Throws a ValidationError naming every bad variable of a write. */
export function assertValidVariables(variables: Record<string, string>): void {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(variables)) {
    const problem = variableNameProblem(name) ?? variableValueProblem(name, value);
    if (problem) problems.push(problem);
  }
  if (problems.length > 0) throw new ValidationError(problems.join("; "));
}
