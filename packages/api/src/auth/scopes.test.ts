import { describe, expect, it } from "vitest";
import { parseScope, requireScope, scopeCovers } from "./scopes.ts";

describe("parseScope", () => {
  it("splits only on the first two colons, so ids may contain colons", () => {
    expect(parseScope("read:tags:env:staging")).toEqual({ action: "read", type: "tags", id: "env:staging" });
    expect(parseScope("read:runs")).toEqual({ action: "read", type: "runs" });
    expect(parseScope("admin")).toEqual({ action: "admin" });
  });
});

describe("scopeCovers", () => {
  it("matches exact ids, type-level scopes and the all type", () => {
    expect(scopeCovers("read:runs:run_1", "read:runs:run_1")).toBe(true);
    expect(scopeCovers("read:runs:run_1", "read:runs:run_2")).toBe(false);
    expect(scopeCovers("read:runs", "read:runs:run_2")).toBe(true);
    expect(scopeCovers("read:all", "read:waitpoints:waitpoint_1")).toBe(true);
    expect(scopeCovers("read:runs:run_1", "read:runs")).toBe(false);
  });

  it("lets write satisfy trigger and batchTrigger, and bare admin everything", () => {
    expect(scopeCovers("write:tasks:hello", "trigger:tasks:hello")).toBe(true);
    expect(scopeCovers("write:tasks", "batchTrigger:tasks:hello")).toBe(true);
    expect(scopeCovers("read:tasks:hello", "trigger:tasks:hello")).toBe(false);
    expect(scopeCovers("admin", "write:waitpoints:waitpoint_1")).toBe(true);
    expect(scopeCovers("admin:runs", "read:runs:run_1")).toBe(false);
  });
});

describe("requireScope", () => {
  const env = { id: "env_1", projectId: "p", projectRef: "proj_1", organizationId: "o", slug: "dev" as const, type: "DEVELOPMENT", parentEnvironmentId: null, branchName: null };
  it("passes secret keys through and refuses an under-scoped JWT with a 403 error", () => {
    expect(() => requireScope({ kind: "secretKey", environment: env }, ["read:runs:run_1"])).not.toThrow();
    const jwt = { kind: "publicJwt" as const, environment: env, scopes: ["read:runs:run_2"], claims: {} };
    expect(() => requireScope(jwt, ["read:runs:run_1"])).toThrow(expect.objectContaining({ code: "forbidden" }));
    expect(() => requireScope(jwt, ["read:runs:run_1", "read:runs:run_2"])).not.toThrow();
  });
});
