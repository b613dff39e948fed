import { z } from "zod";

/** Postgres text cannot hold NUL; refuse it at the edge (400) rather than failing in SQL. */
export const NUL_FREE = [(value: string) => !value.includes("\u0000"), { message: "must not contain NUL characters" }] as const;

/**
 * Half a surrogate pair (a string cut inside an emoji) has no UTF-8 form: the driver would send
 * U+FFFD instead, so the stored key or tag would silently differ from the one sent.
 */
export const WELL_FORMED = [(value: string) => value.isWellFormed(), { message: "must be valid Unicode (it holds half a surrogate pair)" }] as const;

/** A string Postgres stores exactly as sent: no NUL, no unpaired surrogate. */
export function storedText(schema: z.ZodString = z.string()) {
  return schema.refine(...NUL_FREE).refine(...WELL_FORMED);
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
