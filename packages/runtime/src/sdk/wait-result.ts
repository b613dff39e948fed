import type { RawWaitResult } from "./run-context.ts";

/** Thrown by `.unwrap()` when a token timed out (or a waited child run failed). */
export class WaitpointTimeoutError extends Error {
  readonly code?: string;
  constructor(message: string, code?: string) {
    super(message);
    this.name = "WaitpointTimeoutError";
    this.code = code;
  }
}

export type WaitResult<T> = ({ ok: true; output: T } | { ok: false; error: Error }) & {
  /** The output when ok; throws the error (a WaitpointTimeoutError for a timeout) otherwise. */
  unwrap(): T;
};

export function toWaitResult<T>(raw: RawWaitResult): WaitResult<T> {
  if (raw.ok) {
    const output = raw.output as T;
    return { ok: true, output, unwrap: () => output };
  }
  const error = new WaitpointTimeoutError(raw.error.message, raw.error.code);
  return {
    ok: false,
    error,
    unwrap: () => {
      throw error;
    },
  };
}
