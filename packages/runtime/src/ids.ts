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

/** Prefixed ids say what they are: run_, waitpoint_, batch_, sched_, proj_, env_ … */
export const newId = {
  run: () => `run_${id21()}`,
  waitpoint: () => `waitpoint_${id21()}`,
  batch: () => `batch_${id21()}`,
  schedule: () => `sched_${id21()}`,
  project: () => `proj_${id20()}`,
  environment: () => `env_${id21()}`,
  organization: () => `org_${id21()}`,
  user: () => `user_${id21()}`,
  packet: () => `packet_${id21()}`,
  worker: () => `worker_${id12()}`,
  session: () => `session_${id21()}`,
};
