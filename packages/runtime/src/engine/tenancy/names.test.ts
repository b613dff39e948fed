import { describe, expect, it } from "vitest";
import { validateBranchName } from "./branches.ts";
import { parseEnvironmentSlug, sanitizeBranchName } from "./environments.ts";
import { slugify, validateSlug } from "./organizations.ts";
import { normalizeEmail } from "./users.ts";

describe("branch names", () => {
  it("strips the ref prefixes git tools send", () => {
    expect(sanitizeBranchName("refs/heads/feat-a")).toBe("feat-a");
    expect(sanitizeBranchName("refs/remotes/origin/feat-a")).toBe("feat-a");
    expect(sanitizeBranchName("origin/feat/x")).toBe("feat/x");
    expect(sanitizeBranchName("  ")).toBeNull();
    expect(sanitizeBranchName(undefined)).toBeNull();
  });

  it("refuses empty names and names with whitespace", () => {
    expect(validateBranchName("refs/heads/fix/login")).toBe("fix/login");
    expect(() => validateBranchName("")).toThrow(/must not be empty/);
    expect(() => validateBranchName("a b")).toThrow(/whitespace/);
    expect(() => validateBranchName("x".repeat(257))).toThrow(/at most 256/);
  });
});

describe("environment slugs", () => {
  it("maps stg to staging and refuses anything else", () => {
    expect(parseEnvironmentSlug("stg")).toBe("staging");
    expect(parseEnvironmentSlug("preview")).toBe("preview");
    expect(parseEnvironmentSlug("production")).toBeNull();
  });
});

describe("operator input", () => {
  it("derives and checks slugs", () => {
    expect(slugify("My Web Shop!")).toBe("my-web-shop");
    expect(slugify("!!!")).toBe("project");
    expect(validateSlug("acme-eu", "Organisation")).toBe("acme-eu");
    expect(() => validateSlug("Acme", "Organisation")).toThrow(/lower-case/);
  });

  it("normalises emails", () => {
    expect(normalizeEmail(" Ada@Example.COM ")).toBe("ada@example.com");
    expect(() => normalizeEmail("ada")).toThrow(/not an email/);
  });
});
