// What a timer-loop pass costs: it asks every kind of work when it is next due in one statement,
// fires only the kinds whose time has come, and a pass that finds nothing due is that statement.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { BUILT_IN_DUE_WORK, dueSchedules, FakeClock, lapsedLeases, nextDueTimes, type DueWork, type EngineDeps } from "@svc/runtime/engine";
import { TimerLoop } from "../src/timers/timer-loop.ts";

const MAX_SLEEP_MS = 600_000;
let te: TestEngine;
let clock: FakeClock;

beforeAll(async () => {
  clock = new FakeClock(new Date("2026-11-25T12:00:00Z"));
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

/** The engine with a db that counts the statements sent through it (not those of a transaction's own connection). */
function countingEngine(): { deps: EngineDeps; statements: string[] } {
  const statements: string[] = [];
  const pool = te.engine.db as pg.Pool;
  const db = new Proxy(pool, {
    get(target, key) {
      if (key === "query") {
        return (...args: Parameters<pg.Pool["query"]>) => {
          const first = args[0] as string | { text: string };
          statements.push(typeof first === "string" ? first : first.text);
          return (target.query as (...a: unknown[]) => unknown)(...args);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { deps: { ...te.engine, db }, statements };
}

/** A kind of work due at `at` until it fired once, counting its firings; its first fires `yields` items. */
function workDueAt(name: string, at: () => Date | null, yields = 1) {
  const state = { fired: 0 };
  const work: DueWork = {
    name,
    async fire() {
      state.fired++;
      return state.fired === 1 ? yields : 0;
    },
    nextDue: async () => (state.fired > 0 ? null : at()),
  };
  return { work, state };
}

const inMs = (ms: number) => new Date(clock.now().getTime() + ms);

describe("a timer-loop pass", () => {
  it("asks every built-in kind of work when it is next due in one statement", async () => {
    const work = [...BUILT_IN_DUE_WORK, lapsedLeases, dueSchedules];
    expect(work.every((w) => w.nextDueSql)).toBe(true);
    const { deps, statements } = countingEngine();
    const dues = await nextDueTimes(deps.db, work);
    expect(statements).toHaveLength(1);
    // One by one, each kind says the same.
    expect(dues).toEqual(await Promise.all(work.map((w) => w.nextDue(te.db.pool))));
  });

  it("costs one statement when nothing is due, and fires nothing", async () => {
    const { deps, statements } = countingEngine();
    const loop = new TimerLoop(deps, [...BUILT_IN_DUE_WORK, lapsedLeases, dueSchedules], { maxSleepMs: MAX_SLEEP_MS, onError: (error) => { throw error; } });
    loop.start();
    try {
      await expect.poll(() => loop.nextWakeAt).not.toBeNull();
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatch(/^SELECT \(SELECT min\(delay_until\)/);
      loop.wake();
      await expect.poll(() => statements.length).toBe(2);
      await expect.poll(() => loop.nextWakeAt).not.toBeNull();
      expect(statements).toHaveLength(2);
    } finally {
      await loop.stop();
    }
  });

  it("fires only the kinds whose time has come, then sleeps until the next one is due", async () => {
    const now = workDueAt("due-now", () => inMs(-1_000));
    const later = workDueAt("due-later", () => inMs(30_000));
    const loop = new TimerLoop(te.engine, [later.work, now.work], { maxSleepMs: MAX_SLEEP_MS, onError: (error) => { throw error; } });
    loop.start();
    try {
      await expect.poll(() => loop.nextWakeAt?.getTime()).toBe(inMs(30_000).getTime());
      expect(now.state.fired).toBe(1);
      expect(later.state.fired).toBe(0);
    } finally {
      await loop.stop();
    }
  });

  it("looks again soon, not at once, when work is due but none of it fired (another process holds it)", async () => {
    const held = workDueAt("held-elsewhere", () => inMs(-1_000), 0);
    // Still due after firing nothing.
    held.work.nextDue = async () => inMs(-1_000);
    const loop = new TimerLoop(te.engine, [held.work], { maxSleepMs: MAX_SLEEP_MS, onError: (error) => { throw error; } });
    loop.start();
    try {
      // Asleep for 50 ms after firing nothing (the frozen clock keeps that time), not at once.
      await expect.poll(() => loop.nextWakeAt?.getTime()).toBe(inMs(50).getTime());
      expect(held.state.fired).toBeGreaterThanOrEqual(1);
    } finally {
      await loop.stop();
    }
  });
});
