import { findUnstorableText } from "../contracts/text.ts";
import { ValidationError } from "../errors.ts";

/**
 * Deepest nesting of arrays and objects accepted in JSON from outside (request bodies, NDJSON
 * lines, payload strings). Everything downstream walks values recursively (zod, superjson, the
 * response serialiser, task code), and a few thousand levels overflow the stack; real data stays
 * far below this (API responses, ASTs and JSON Schemas run 10–40 deep). A trigger body puts its
 * payload 2 levels down (`{payload, options}`), a v2 batch 3 (`{items: [{payload}]}`), superjson
 * text 1 (`{json}`), so a user value keeps at least 124 levels.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * True when JSON text nests arrays/objects more than `limit` deep. A linear scan with constant
 * stack, so the check cannot itself overflow; brackets inside strings do not count. It does not
 * validate: malformed text is left to JSON.parse.
 */
export function jsonNestingExceeds(text: string, limit = MAX_JSON_DEPTH): boolean {
  if (text.length <= limit) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > limit) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}

/** The ValidationError for JSON nested too deep; `what` names the text ("Request body", "line 3"). */
export function tooDeepError(what: string): ValidationError {
  return new ValidationError(`${what}: JSON is nested more than ${MAX_JSON_DEPTH} levels deep`);
}

/**
 * JSON.parse for text from outside: ValidationError (a 400) when it is too deep, not JSON, or
 * holds a string Postgres cannot store as sent (a NUL, half a surrogate pair: the stored-text
 * rule, the same for every field). `what` prefixes the message.
 */
export function parseJsonText(text: string, what: string): unknown {
  if (jsonNestingExceeds(text)) throw tooDeepError(what);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ValidationError(`${what}: not valid JSON`);
  }
  assertStorableJson(value, what);
  return value;
}

/** ValidationError naming the first string of `value` that breaks the stored-text rule (see findUnstorableText). */
export function assertStorableJson(value: unknown, what: string): void {
  const found = findUnstorableText(value);
  if (found !== null) throw new ValidationError(`${what}: ${found}`);
}
