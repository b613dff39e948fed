import { describe, expect, it } from "vitest";
import { applyMetadataOperations, collapseMetadataOperations, METADATA_KEY_PATTERN, metadataKeyProblem } from "./operations.ts";

describe("applyMetadataOperations", () => {
  it("applies paths only where their parent exists, as Trigger.dev's does", () => {
    expect(applyMetadataOperations({}, [{ type: "set", key: "$.a.b", value: 1 }]).metadata).toEqual({});
    expect(applyMetadataOperations({ a: {} }, [{ type: "set", key: "$.a.b", value: 1 }]).metadata).toEqual({ a: { b: 1 } });
    expect(applyMetadataOperations({ a: [1, 2] }, [{ type: "set", key: "$.a.1", value: 9 }]).metadata).toEqual({ a: [1, 9] });
    expect(applyMetadataOperations({ a: {} }, [{ type: "increment", key: "$.a.n", value: 2 }]).metadata).toEqual({ a: { n: 2 } });
  });

  it("appends to a missing, an array or a single value, and removes deep-equal elements", () => {
    const ops = [
      { type: "append", key: "x", value: 1 },
      { type: "append", key: "y", value: 2 },
      { type: "append", key: "z", value: { a: 1 } },
      { type: "remove", key: "z", value: { a: 1 } },
    ] as const;
    expect(applyMetadataOperations({ y: 1, z: [] }, ops).metadata).toEqual({ x: [1], y: [1, 2], z: [] });
  });

  it("leaves the input alone and reports what it could not apply", () => {
    const current = { n: "text" };
    const result = applyMetadataOperations(current, [{ type: "remove", key: "n", value: 1 }, { type: "set", key: "__proto__", value: 1 }, { type: "increment", key: "n", value: 2 }]);
    expect(result.metadata).toEqual({ n: 2 });
    expect(result.unapplied.map((o) => o.type)).toEqual(["remove", "set"]);
    expect(current).toEqual({ n: "text" });
  });
});

describe("collapseMetadataOperations", () => {
  it("sums consecutive increments and keeps the last of consecutive sets, leaving order otherwise", () => {
    expect(
      collapseMetadataOperations([
        { type: "increment", key: "c", value: 1 },
        { type: "increment", key: "c", value: 2 },
        { type: "set", key: "s", value: "a" },
        { type: "set", key: "s", value: "b" },
        { type: "append", key: "l", value: 1 },
        { type: "append", key: "l", value: 1 },
        { type: "increment", key: "c", value: 1 },
      ]),
    ).toEqual([
      { type: "increment", key: "c", value: 3 },
      { type: "set", key: "s", value: "b" },
      { type: "append", key: "l", value: 1 },
      { type: "append", key: "l", value: 1 },
      { type: "increment", key: "c", value: 1 },
    ]);
  });
});

describe("metadataKeyProblem", () => {
  it("refuses the root, empty path parts and prototype keys", () => {
    expect(metadataKeyProblem("$.")).toMatch(/segment below \$/);
    expect(metadataKeyProblem("$.a..b")).toMatch(/segment below \$/);
    expect(metadataKeyProblem("$.a.constructor")).toMatch(/__proto__/);
    expect(metadataKeyProblem("a.b")).toBeNull();
    expect(metadataKeyProblem("$.a.b")).toBeNull();
  });

  it("says what the document's pattern for keys says, key by key", () => {
    const pattern = new RegExp(METADATA_KEY_PATTERN, "u");
    const parts = ["", "a", "__proto__", "constructor", "prototype", "x\n__proto__", "proto", "$", "."];
    const keys = new Set<string>();
    for (const a of parts) for (const b of parts) for (const c of parts) {
      keys.add(a + b);
      keys.add(`${a}.${b}`);
      keys.add(`$.${a}`);
      keys.add(`$.${a}.${b}`);
      keys.add(`$.${a}.${b}.${c}`);
    }
    const disagreeing = [...keys].filter((key) => key.length > 0 && pattern.test(key) !== (metadataKeyProblem(key) === null));
    expect(disagreeing).toEqual([]);
    expect(pattern.test("$.a.__proto__")).toBe(false);
    expect(pattern.test("a.__proto__")).toBe(true);
  });
});
