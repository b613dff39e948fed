import { describe, expect, it } from "vitest";
import { concurrencyLimit, isConcurrencyLimit, taskConcurrencyOf } from "./concurrency-limit.ts";
import { task } from "./task.ts";

const run = async () => "ok";

describe("concurrencyLimit() and a task's concurrency", () => {
  it("marks a declared limit and keeps its fields, as Trigger.dev's does", () => {
    const openai = concurrencyLimit({ name: "openai", total: 25 });
    expect(openai).toEqual({ name: "openai", total: 25 });
    expect(isConcurrencyLimit(openai)).toBe(true);
    expect(isConcurrencyLimit({ name: "openai", total: 25 })).toBe(false);
  });

  it("normalizes an inline limit, limit objects and names", () => {
    const openai = concurrencyLimit({ name: "openai", total: 25 });
    expect(task({ id: "t", concurrency: [{ total: 5 }, openai, "images"], run }).concurrency).toEqual({
      inline: { total: 5 },
      limits: [{ name: "openai", bounds: { total: 25 } }, { name: "images" }],
    });
    expect(taskConcurrencyOf("t", { perKey: 1, total: 10 })).toEqual({ inline: { perKey: 1, total: 10 }, limits: [] });
    expect(taskConcurrencyOf("t", "images")).toEqual({ limits: [{ name: "images" }] });
    expect(task({ id: "none", run }).concurrency).toBeUndefined();
  });

  it("refuses bad declarations with an error naming the task", () => {
    expect(() => task({ id: "two-inline", concurrency: [{ total: 1 }, { perKey: 2 }], run })).toThrow(
      'task("two-inline"): concurrency accepts at most one inline limit. Give shared limits a name with concurrencyLimit().',
    );
    expect(() => task({ id: "three", concurrency: ["a", "b", "c"], run })).toThrow('task("three"): concurrency accepts at most two named limits.');
    expect(() => task({ id: "bad-name", concurrency: "has space", run })).toThrow(
      'task("bad-name"): concurrency: limit name "has space" is not 1-122 characters using only letters, numbers, underscores and hyphens.',
    );
    expect(() => task({ id: "zero", concurrency: { total: 0 }, run })).toThrow('task("zero"): concurrency: the inline limit: `total` must be a whole number from 1 to 100000, got 0');
    expect(() => task({ id: "frac", concurrency: [{ name: "x", perKey: 1.5 }], run })).toThrow('task("frac"): concurrency: limit "x": `perKey` must be a whole number from 1 to 100000, got 1.5');
    expect(() => task({ id: "twice", concurrency: ["x", "x"], run })).toThrow('task("twice"): concurrency names the limit "x" twice.');
    expect(() => task({ id: "odd", concurrency: [42 as never], run })).toThrow('task("odd"): concurrency: expected a limit');
    expect(() => concurrencyLimit({ name: "big", total: 100_001 })).toThrow('concurrencyLimit("big"): `total` must be a whole number from 1 to 100000, got 100001');
    expect(() => concurrencyLimit({ name: "" })).toThrow("concurrencyLimit(): limit name");
  });
});
