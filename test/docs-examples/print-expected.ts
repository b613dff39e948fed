import { formatWithOptions } from "node:util";
import { matchesExpected } from "./expected-output.ts";

/**
 * What `console.log(value); // → expected` in a `ts test` block becomes when the docs test runs
 * it: prints the value as console.log would (on one line), and throws when it is not what the
 * comment shows.
 */
export function printExpected(expected: string, ...values: unknown[]): void {
  const text = formatWithOptions({ depth: null, breakLength: Infinity, colors: false }, ...values);
  console.log(text);
  if (!matchesExpected(text, expected)) throw new Error(`printed something other than the doc shows\n  expected: ${expected}\n  printed:  ${text}`);
}
