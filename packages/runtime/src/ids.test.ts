import { describe, expect, it } from "vitest";
import { newId, randomId, timeOrderedId } from "./ids.ts";

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

  it("of the rows made at every run sort by creation time, the millisecond first, then 62 random bits", () => {
    const t = Date.UTC(2026, 10, 25, 5, 0, 0);
    const ids = [t, t + 1, t + 1, t + 1_000, t + 86_400_000, Date.UTC(2059, 0, 1)].map((ms) => timeOrderedId(ms));
    for (const id of ids) expect(id).toMatch(/^[0-9a-z]{21}$/);
    expect(ids.slice(0, 2).map((id) => id.slice(0, 9))).toEqual([t.toString(36).padStart(9, "0"), (t + 1).toString(36).padStart(9, "0")]);
    // Later milliseconds sort later, as text (the order of a text primary key), up to 2059 and past it.
    const prefixes = ids.map((id) => id.slice(0, 9));
    expect([...prefixes].sort()).toEqual(prefixes);
    // The same millisecond: still distinct, told apart by the random part.
    expect(ids[1]).not.toBe(ids[2]);
    // Made one after another, newId's run ids never go backwards.
    const made = Array.from({ length: 2_000 }, () => newId.run().slice(4, 13));
    expect([...made].sort()).toEqual(made);
  });
});
