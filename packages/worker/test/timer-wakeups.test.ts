// The timer loop's wake-ups: a NOTIFY naming when its item is due wakes the loop only if that is
// before its next wake-up, and then at that time; one without a time wakes it at once; one heard
// while a pass runs is not lost.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { FakeClock, type DueWork } from "@svc/runtime/engine";
import { TimerLoop } from "../src/timers/timer-loop.ts";

const MAX_SLEEP_MS = 600_000;
let te: TestEngine;
let clock: FakeClock;

beforeAll(async () => {
  clock = new FakeClock(new Date("2026-11-25T12:00:00Z"));
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

/**
 * Work that counts the loop's passes (each asks every kind when it is next due), each one held
 * until the test lets it go when `hold` is set.
 */
function countedWork() {
  const state = { passes: 0, fired: 0, hold: null as Promise<void> | null, passStarted: null as (() => void) | null };
  const work: DueWork = {
    name: "counted",
    async fire() {
      state.fired++;
      return 0;
    },
    // Nothing of its own is ever due: the loop sleeps its longest unless woken.
    async nextDue(db) {
      state.passes++;
      state.passStarted?.();
      if (state.hold) await state.hold;
      return (await db.query<{ due: Date | null }>(`SELECT NULL::timestamptz AS due`)).rows[0]!.due;
    },
  };
  return { work, state };
}

const inMs = (ms: number) => new Date(clock.now().getTime() + ms);

describe("the timer loop's wake-ups", () => {
  it("sleeps on through a wake-up for later than its next one, moves its wake-up to an earlier time, and wakes at once for now", async () => {
    const { work, state } = countedWork();
    const loop = new TimerLoop(te.engine, [work], { maxSleepMs: MAX_SLEEP_MS, onError: (error) => { throw error; } });
    loop.start();
    try {
      await expect.poll(() => loop.nextWakeAt?.getTime()).toBe(inMs(MAX_SLEEP_MS).getTime());
      expect(state.passes).toBe(1);

      // A token timing out in an hour: the pass in ten minutes sees it; nothing happens now.
      loop.wake(inMs(3_600_000));
      expect(loop.nextWakeAt?.getTime()).toBe(inMs(MAX_SLEEP_MS).getTime());

      // A schedule due in five seconds: the loop now wakes then, not in ten minutes.
      loop.wake(inMs(5_000));
      expect(loop.nextWakeAt?.getTime()).toBe(inMs(5_000).getTime());
      // …and a later one does not push that back.
      loop.wake(inMs(60_000));
      expect(loop.nextWakeAt?.getTime()).toBe(inMs(5_000).getTime());
      expect(state.passes).toBe(1);

      // Due now (a retry, a delayed run, an offer handed over), or a time already past: a pass at once.
      loop.wake();
      expect(loop.nextWakeAt).toBeNull();
      await expect.poll(() => state.passes).toBe(2);
      await expect.poll(() => loop.nextWakeAt?.getTime()).toBe(inMs(MAX_SLEEP_MS).getTime());
      loop.wake(inMs(-1_000));
      await expect.poll(() => state.passes).toBe(3);
      // An unreadable time counts as now.
      await expect.poll(() => loop.nextWakeAt).not.toBeNull();
      loop.wake(new Date(Number.NaN));
      await expect.poll(() => state.passes).toBe(4);
    } finally {
      await loop.stop();
    }
  });

  it("keeps a wake-up heard while a pass runs: the next sleep ends no later than it asked", async () => {
    const { work, state } = countedWork();
    let release!: () => void;
    state.hold = new Promise<void>((resolve) => (release = resolve));
    const started = new Promise<void>((resolve) => (state.passStarted = resolve));
    const loop = new TimerLoop(te.engine, [work], { maxSleepMs: MAX_SLEEP_MS, onError: (error) => { throw error; } });
    loop.start();
    try {
      await started;
      expect(loop.nextWakeAt).toBeNull();
      loop.wake(inMs(7_000));
      loop.wake(inMs(9_000));
      release();
      await expect.poll(() => loop.nextWakeAt?.getTime()).toBe(inMs(7_000).getTime());
      expect(state.passes).toBe(1);
    } finally {
      await loop.stop();
    }
  });

  it("stops while asleep at once", async () => {
    const { work } = countedWork();
    const loop = new TimerLoop(te.engine, [work], { maxSleepMs: MAX_SLEEP_MS, onError: (error) => { throw error; } });
    loop.start();
    await expect.poll(() => loop.nextWakeAt).not.toBeNull();
    await loop.stop();
    expect(loop.nextWakeAt).toBeNull();
  });
});
