import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** A random lowercase base-36 string, `length` chars (about 5.17 bits each). */
export function randomId(length = 21): string {
  const bytes = randomBytes(length);
  let out = "";
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i]! % 36];
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
