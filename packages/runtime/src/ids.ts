import { customAlphabet } from "nanoid";

/** Lowercase base 36: ids read the same in URLs, logs and case-insensitive places. */
const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";
const id21 = customAlphabet(ALPHABET, 21);
const id20 = customAlphabet(ALPHABET, 20);
const id12 = customAlphabet(ALPHABET, 12);

/** A random lowercase base-36 string, `length` chars (about 5.17 bits each), from nanoid's unbiased generator. */
export function randomId(length = 21): string {
  return length === 21 ? id21() : customAlphabet(ALPHABET, length)();
}

/**
 * 21 characters that sort by creation time: the time in ms, 9 base-36 characters (fixed width,
 * good until the year 5188), then 12 random ones (62 bits: ids made in the same millisecond do not
 * collide). For the rows made at every run (runs, their attempts and ledger, waitpoints, batches,
 * packets, sessions): a new key lands next to the last one in its primary key's index instead of
 * on a random page of it, so a table of millions of rows takes inserts with its index's right edge
 * in memory, not its whole index (BENCH=history). The time is the system clock's, as a UUIDv7's:
 * it orders, it decides nothing.
 */
export function timeOrderedId(now = Date.now()): string {
  return now.toString(36).padStart(9, "0") + id12();
}

/** Prefixed ids say what they are: run_, waitpoint_, batch_, sched_, proj_, env_ … */
export const newId = {
  run: () => `run_${timeOrderedId()}`,
  waitpoint: () => `waitpoint_${timeOrderedId()}`,
  batch: () => `batch_${timeOrderedId()}`,
  schedule: () => `sched_${id21()}`,
  project: () => `proj_${id20()}`,
  environment: () => `env_${id21()}`,
  organization: () => `org_${id21()}`,
  user: () => `user_${id21()}`,
  packet: () => `packet_${timeOrderedId()}`,
  worker: () => `worker_${id12()}`,
  session: () => `session_${timeOrderedId()}`,
  bulkAction: () => `bulk_${timeOrderedId()}`,
};
