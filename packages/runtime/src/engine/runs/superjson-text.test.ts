import superjson from "superjson";
import { describe, expect, it } from "vitest";
import { parseSuperjson, stringifySuperjson } from "./superjson-text.ts";

const shared = { a: 1 };
const sparse = [1, , 3];
class Point {
  constructor(public x: number) {}
}
const samples: [string, unknown][] = [
  ["number", 1],
  ["negative zero", -0],
  ["NaN", Number.NaN],
  ["Infinity", Number.POSITIVE_INFINITY],
  ["string", "héllo \"quoted\" \n"],
  ["boolean", false],
  ["null", null],
  ["undefined", undefined],
  ["plain object", { a: 1, b: [true, null, "x"], c: { d: {} } }],
  ["object with undefined", { a: undefined }],
  ["array with undefined", [1, undefined]],
  ["sparse array", sparse],
  ["date", new Date("2026-01-02T03:04:05.678Z")],
  ["nested date", { at: new Date(0) }],
  ["map", new Map([["k", 1]])],
  ["set", new Set([1])],
  ["bigint", 10n],
  ["one object twice", { x: shared, y: shared }],
  ["class instance", new Point(1)],
  ["null-prototype object", Object.assign(Object.create(null), { a: 1 })],
  ["regexp", /x/g],
  ["error", new Error("boom")],
  ["keys needing escapes", { "__proto__x": 1, "a\"b": 2 }],
];

describe("superjson text", () => {
  it.each(samples)("writes what superjson writes: %s", (_, value) => {
    expect(stringifySuperjson(value)).toBe(superjson.stringify(value));
  });

  it.each(samples)("reads back what superjson reads back: %s", (_, value) => {
    const text = superjson.stringify(value);
    expect(parseSuperjson(text)).toEqual(superjson.parse(text));
  });

  it("keeps superjson's referential equality where it records it", () => {
    const back = parseSuperjson(stringifySuperjson({ x: shared, y: shared })) as { x: object; y: object };
    expect(back.x).toBe(back.y);
  });
});
