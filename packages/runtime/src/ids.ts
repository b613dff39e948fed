import { randomFillSync } from "node:crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";
/** Bytes at or above this are skipped: 252 = 7 × 36, so every character is equally likely. */
const UNBIASED_LIMIT = 252;

/** Random bytes drawn from the OS in 4 KiB refills (one call per ~190 ids instead of one per id). */
const pool = Buffer.alloc(4096);
let offset = pool.length;

function randomByte(): number {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  return pool[offset++]!;
}

/** A random lowercase base-36 string, `length` chars (about 5.17 bits each). */
export function randomId(length = 21): string {
  let out = "";
  while (out.length < length) {
    const byte = randomByte();
    if (byte < UNBIASED_LIMIT) out += ALPHABET[byte % 36];
  }
  return out;
}

/** Prefixed ids say what they are: run_, waitpoint_, batch_, sched_, proj_, env_ … */
export const newId = {
  run: () => `run_${randomId(21)}`,
  waitpoint: () => `waitpoint_${randomId(21)}`,
  batch: () => `batch_${randomId(21)}`,
  schedule: () => `sched_${randomId(21)}`,
  project: () => `proj_${randomId(20)}`,
  environment: () => `env_${randomId(21)}`,
  organization: () => `org_${randomId(21)}`,
  user: () => `user_${randomId(21)}`,
  packet: () => `packet_${randomId(21)}`,
  worker: () => `worker_${randomId(12)}`,
};
