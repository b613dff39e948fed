import { describe, expect, it } from "vitest";
import { ValidationError } from "../../errors.ts";
import { decideTags } from "./add-tags.ts";

describe("decideTags", () => {
  it("adds the trimmed tags the run lacks, once each, after those it has", () => {
    expect(decideTags(["a"], [" b ", "a", "", "  ", "b", "c"])).toEqual({ kind: "add", added: ["b", "c"], tags: ["a", "b", "c"] });
  });

  it("does nothing when the run has every tag asked for", () => {
    expect(decideTags(["a", "b"], ["b", " a", ""])).toEqual({ kind: "none" });
    expect(decideTags([], [])).toEqual({ kind: "none" });
  });

  it("refuses to go past 10 tags, naming the total and every tag it did not set", () => {
    const nine = Array.from({ length: 9 }, (_, i) => `t${i}`);
    expect(decideTags(nine, ["x"])).toMatchObject({ kind: "add", tags: [...nine, "x"] });
    expect(decideTags(nine, ["x", "y", "t0"])).toEqual({ kind: "too_many", total: 11, refused: ["x", "y"] });
  });

  it("refuses a tag longer than 128 characters, whatever else is asked", () => {
    expect(decideTags([], ["x".repeat(128)])).toMatchObject({ kind: "add" });
    expect(() => decideTags([], ["ok", "x".repeat(129)])).toThrow(ValidationError);
  });
});
