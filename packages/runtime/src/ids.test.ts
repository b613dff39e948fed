import { describe, expect, it } from "vitest";
import { newId, randomId } from "./ids.ts";

describe("ids", () => {
  it("are prefixed, lowercase base-36 of the asked length, and do not repeat", () => {
    expect(newId.run()).toMatch(/^run_[0-9a-z]{21}$/);
    expect(newId.project()).toMatch(/^proj_[0-9a-z]{20}$/);
    expect(randomId(7)).toMatch(/^[0-9a-z]{7}$/);
    const many = new Set(Array.from({ length: 20_000 }, () => newId.waitpoint()));
    expect(many.size).toBe(20_000);
  });

  it("use every character about equally often (no modulo bias)", () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 10_000; i++) for (const c of randomId(21)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(36);
    const expected = (10_000 * 21) / 36; // 5,833 each
    // With the old `byte % 36`, '0'–'3' came up 8/7 as often (≈ 6,600): far outside this band.
    for (const n of counts.values()) expect(Math.abs(n - expected)).toBeLessThan(expected * 0.07);
  });
});
