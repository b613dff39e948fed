import { inspect } from "node:util";

/** An error as stored on a run or attempt (errors that cross the database are data). */
export interface SerializedError {
  type: "user" | "internal";
  name: string;
  message: string;
  stackTrace?: string;
  code?: string;
}

/**
 * What task code threw, as storable data. Anything can be thrown: values JSON cannot hold (a
 * BigInt, a cycle) are described with util.inspect, and text Postgres cannot store (NUL, half a
 * surrogate pair) is replaced with U+FFFD, so recording the error can never fail.
 */
export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    const stack = field(error, "stack");
    return { type: "user", name: field(error, "name") || "Error", message: field(error, "message") ?? "", ...(stack ? { stackTrace: stack } : {}) };
  }
  return { type: "user", name: "Error", message: storable(typeof error === "string" ? error : describe(error)) };
}

export function internalError(code: string, message: string): SerializedError {
  return { type: "internal", name: code, code, message: storable(message) };
}

/**
 * An Error's name, message or stack as storable text. Errors are plain objects: libraries set these
 * to anything (a number, undefined), and a getter may throw.
 */
function field(error: Error, key: "name" | "message" | "stack"): string | undefined {
  try {
    const value: unknown = error[key];
    if (value === undefined || value === null) return undefined;
    return storable(typeof value === "string" ? value : describe(value));
  } catch (thrown) {
    return storable(`(reading its ${key} threw ${inspectSafely(thrown)})`);
  }
}

function describe(value: unknown): string {
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return json;
  } catch {
    // BigInt, cycles, throwing toJSON: described below.
  }
  return inspectSafely(value);
}

function inspectSafely(value: unknown): string {
  try {
    return inspect(value, { depth: 4, breakLength: Number.POSITIVE_INFINITY });
  } catch {
    // A custom inspect function that throws.
    return Object.prototype.toString.call(value);
  }
}

/** Text Postgres can store in text and jsonb: no NUL, no lone surrogates. */
export function storable(text: string): string {
  const wellFormed = text.toWellFormed();
  return wellFormed.includes("\u0000") ? wellFormed.replaceAll("\u0000", "\ufffd") : wellFormed;
}
