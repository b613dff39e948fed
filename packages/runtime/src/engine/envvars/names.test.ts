import { describe, expect, it } from "vitest";
import { assertValidVariables, MAX_VARIABLE_VALUE_BYTES, variableNameProblem } from "./names.ts";

describe("variableNameProblem", () => {
  it("accepts shell-style names", () => {
    for (const name of ["A", "_PRIVATE", "DATABASE_URL", "a1_b2"]) expect(variableNameProblem(name)).toBeNull();
  });

  it("refuses names a shell could not export, naming the variable", () => {
    expect(variableNameProblem("1ABC")).toMatch(/Invalid variable name "1ABC"/);
    expect(variableNameProblem("WITH-DASH")).toMatch(/letters, digits and underscores/);
    expect(variableNameProblem("")).toMatch(/Invalid variable name/);
    expect(variableNameProblem("X".repeat(257))).toMatch(/at most 256/);
  });

  it("refuses the names svc sets for every run", () => {
    expect(variableNameProblem("SERVICE_SECRET_KEY")).toBe("SERVICE_SECRET_KEY is reserved: svc sets it for every run itself");
    expect(variableNameProblem("SERVICE_API_URL")).toMatch(/reserved/);
  });
});

describe("assertValidVariables", () => {
  it("lists every problem of a bulk write in one error", () => {
    expect(() => assertValidVariables({ OK: "1", "BAD-1": "x", SERVICE_API_URL: "y" })).toThrow(/BAD-1.*; SERVICE_API_URL is reserved/);
  });

  it("refuses oversized values", () => {
    expect(() => assertValidVariables({ BIG: "x".repeat(MAX_VARIABLE_VALUE_BYTES + 1) })).toThrow(/larger than/);
    expect(() => assertValidVariables({ EMPTY: "" })).not.toThrow();
  });
});
