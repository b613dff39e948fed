import type { PeerSide } from "./peer-side.ts";
import { pause } from "./peer-svc.ts";
import { now } from "./stats.ts";

/**
 * `rounds` rounds in which every side takes one turn, the side that starts rotating by round
 * (`offset` shifts the rotation, e.g. by repeat). Only the side whose turn it is works: the others'
 * workers sit idle meanwhile, so each side's figures are its own, and the machine's drift over
 * minutes falls on all sides alike.
 */
export async function inTurns(sides: number, rounds: number, offset: number, turn: (side: number, round: number) => Promise<void>): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < sides; k++) await turn((round + offset + k) % sides, round);
  }
}

/** `count` calls of `fn`, at most `width` in flight. */
export async function lanes(count: number, width: number, fn: () => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => { while (next < count) { next++; await fn(); } }));
}

/** Units triggered one at a time, each then waited for; their trigger → done times are added to `samples`. */
export async function runEach(side: PeerSide, count: number, samples: number[]): Promise<void> {
  for (let i = 0; i < count; i++) {
    const t0 = now();
    await side.runOne();
    samples.push(now() - t0);
    await pause();
  }
}

/** `count` units through `width` lanes: their trigger → done times are added to `samples`; resolves with the burst's time. */
export async function burst(side: PeerSide, count: number, width: number, samples: number[]): Promise<number> {
  const t0 = now();
  await lanes(count, width, async () => {
    const t1 = now();
    await side.runOne();
    samples.push(now() - t1);
  });
  return now() - t0;
}

/** Waits resumed one at a time (the next once the previous unit is done); signal → code times are added to `samples`. */
export async function resumeEach(side: PeerSide, waits: unknown[], samples?: number[]): Promise<void> {
  for (const w of waits) {
    const t0 = now();
    const { resumed, finished } = await side.resume(w);
    samples?.push((await resumed) - t0);
    await finished;
    await pause();
  }
}
