import { describe, expect, it } from "vitest";
import { queue } from "./queue.ts";
import { rateLimitOf } from "./rate-limit.ts";
import { task } from "./task.ts";

const run = async () => {};

describe("rateLimit on task() and queue()", () => {
  it("reads a duration or milliseconds as the period", () => {
    expect(rateLimitOf({ limit: 10, period: "1s" }, "here")).toEqual({ limit: 10, periodMs: 1000 });
    expect(rateLimitOf({ limit: 100, period: "1h30m" }, "here")).toEqual({ limit: 100, periodMs: 5_400_000 });
    expect(rateLimitOf({ limit: 1, period: 250 }, "here")).toEqual({ limit: 1, periodMs: 250 });
  });

  it("puts a task's rateLimit on its queue, its own or a named one", () => {
    expect(task({ id: "own", rateLimit: { limit: 5, period: "1m" }, run }).queue).toEqual({ rateLimit: { limit: 5, period: "1m" } });
    expect(task({ id: "named", queue: "openai", rateLimit: { limit: 5, period: "1m" }, run }).queue).toEqual({ name: "openai", rateLimit: { limit: 5, period: "1m" } });
    const openai = queue({ name: "openai", concurrencyLimit: 3, rateLimit: { limit: 10, period: "1s" } });
    expect(task({ id: "shared", queue: openai, run }).queue).toEqual({ name: "openai", concurrencyLimit: 3, rateLimit: { limit: 10, period: "1s" } });
    // The same limit said twice is one limit.
    expect(task({ id: "twice", queue: openai, rateLimit: { limit: 10, period: 1000 }, run }).queue?.rateLimit).toEqual({ limit: 10, period: 1000 });
  });

  it("refuses bad definitions with what is wrong, where", () => {
    expect(() => task({ id: "zero", rateLimit: { limit: 0, period: "1s" }, run })).toThrow('task("zero"): `rateLimit.limit` must be a whole number from 1 to 1,000,000');
    expect(() => task({ id: "frac", rateLimit: { limit: 1.5, period: "1s" }, run })).toThrow("`rateLimit.limit` must be a whole number");
    expect(() => task({ id: "huge", rateLimit: { limit: 1_000_001, period: "1s" }, run })).toThrow("from 1 to 1,000,000");
    expect(() => task({ id: "period", rateLimit: { limit: 1, period: "soon" }, run })).toThrow('task("period"): `rateLimit.period` must be a duration ("1s", "10m", "1h") or whole milliseconds, from 1 ms to 7 days');
    expect(() => task({ id: "long", rateLimit: { limit: 1, period: "8d" }, run })).toThrow("from 1 ms to 7 days");
    expect(() => task({ id: "none", rateLimit: { limit: 1 } as never, run })).toThrow("`rateLimit.period` must be");
    expect(() => task({ id: "keyed", rateLimit: { limit: 1, period: "1s", key: "customer" } as never, run })).toThrow(
      'task("keyed"): `rateLimit.key` is given when a run is triggered (options.rateLimit: { key }), not where the limit is declared',
    );
    expect(() => task({ id: "burst", rateLimit: { limit: 1, period: "1s", burst: 3 } as never, run })).toThrow("`rateLimit` takes only limit and period (got burst)");
    expect(() => task({ id: "inline", queue: { name: "q", rateLimit: { limit: -1, period: "1s" } }, run })).toThrow('task("inline"): `rateLimit.limit`');
    expect(() => queue({ name: "q", rateLimit: { limit: 1, period: 0 } })).toThrow('queue("q"): `rateLimit.period` must be');
    expect(() => queue({ name: "q", rateLimit: "10/s" as never })).toThrow('queue("q"): `rateLimit` must be { limit, period }');
    const openai = queue({ name: "openai", rateLimit: { limit: 10, period: "1s" } });
    expect(() => task({ id: "differs", queue: openai, rateLimit: { limit: 20, period: "1s" }, run })).toThrow(
      'task("differs"): `rateLimit` differs from its queue\'s (openai): declare it once, on the task or on the queue',
    );
  });
});
