import { z } from "zod";

/** Postgres text cannot hold NUL; refuse it at the edge (400) rather than failing in SQL. */
export const NUL_FREE = [(value: string) => !value.includes("\u0000"), { message: "must not contain NUL characters" }] as const;

/**
 * Half a surrogate pair (a string cut inside an emoji) has no UTF-8 form: the driver would send
 * U+FFFD instead, so the stored key or tag would silently differ from the one sent.
 */
export const WELL_FORMED = [(value: string) => value.isWellFormed(), { message: "must be valid Unicode (it holds half a surrogate pair)" }] as const;

/** Why `text` cannot be stored exactly as sent (NUL_FREE, WELL_FORMED), or null when it can. */
export function unstorableReason(text: string): string | null {
  if (text.includes("\u0000")) return "must not contain NUL characters";
  if (!text.isWellFormed()) return "must be valid Unicode (it holds half a surrogate pair)";
  return null;
}

/**
 * The first string of a JSON value, property names included, that breaks the stored-text rule,
 * as `path: reason` (`options.metadata.note: must not contain NUL characters`), or null. One rule
 * for every field: Postgres text and jsonb hold no NUL, and half a surrogate pair has no UTF-8
 * form (strict JSON parsers refuse its `\ud800` escape). Values come from JSON.parse of text
 * whose depth was checked, so the recursion is bounded.
 */
export function findUnstorableText(value: unknown, path = ""): string | null {
  const at = (key: string | number) => (path === "" ? String(key) : `${path}.${key}`);
  if (typeof value === "string") {
    const reason = unstorableReason(value);
    return reason === null ? null : `${path === "" ? "value" : path}: ${reason}`;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableText(value[i], at(i));
      if (found !== null) return found;
    }
    return null;
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, inner] of Object.entries(value)) {
      const reason = unstorableReason(key);
      if (reason !== null) return `${path === "" ? "" : `${path}: `}a property name ${reason}`;
      const found = findUnstorableText(inner, at(key));
      if (found !== null) return found;
    }
  }
  return null;
}

/** The stored-text rule as a JSON Schema pattern, for the OpenAPI document (no NUL; half surrogate pairs are said in words). */
export const STORED_TEXT_PATTERN = "^[^\\u0000]*$";

/**
 * A string Postgres stores exactly as sent: no NUL, no unpaired surrogate. The document shows
 * the NUL rule as a pattern (the base schema must not have a pattern of its own).
 */
export function storedText(schema: z.ZodString = z.string()) {
  return schema.refine(...NUL_FREE).refine(...WELL_FORMED).meta({ pattern: STORED_TEXT_PATTERN });
}

/** Longest idempotency key, in characters (Trigger.dev's limit) and in UTF-8 bytes. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 2048;

const utf8 = new TextEncoder();

/**
 * An idempotency key. Keys live in unique btree indexes, whose entries Postgres caps at about
 * 2.7 kB: 2048 characters of CJK text are 6 kB, so the bytes are capped as well.
 */
export const IdempotencyKey = storedText(
  z.string().min(1).max(MAX_IDEMPOTENCY_KEY_LENGTH, `must be ${MAX_IDEMPOTENCY_KEY_LENGTH} characters or less`),
).refine((value) => utf8.encode(value).length <= MAX_IDEMPOTENCY_KEY_LENGTH, {
  message: `must be ${MAX_IDEMPOTENCY_KEY_LENGTH} bytes or less in UTF-8`,
});
