import { describe, expect, it } from "vitest";
import { UnprocessableError, ValidationError } from "../../errors.ts";
import { planToken } from "./create-token.ts";
import { parseTokenListFilter } from "./list-tokens.ts";

const NOW = new Date("2026-01-01T00:00:00.000Z");

describe("planToken", () => {
  it("applies the spec's defaults: 10m timeout, 1h key TTL", () => {
    expect(planToken({}, NOW)).toEqual({ timeoutAt: new Date("2026-01-01T00:10:00.000Z"), tags: [], idempotencyKey: null, idempotencyKeyExpiresAt: null });
    expect(planToken({ idempotencyKey: "k" }, NOW).idempotencyKeyExpiresAt).toEqual(new Date("2026-01-01T01:00:00.000Z"));
  });

  it("rejects bad durations, bad dates and too many or too long tags", () => {
    expect(() => planToken({ timeout: "later" }, NOW)).toThrow(ValidationError);
    expect(() => planToken({ timeout: Number.NaN }, NOW)).toThrow(ValidationError);
    expect(() => planToken({ idempotencyKeyTTL: "1 hour" }, NOW)).toThrow(ValidationError);
    expect(() => planToken({ tags: Array.from({ length: 11 }, (_, i) => String(i)) }, NOW)).toThrow(UnprocessableError);
    expect(() => planToken({ tags: ["x".repeat(129)] }, NOW)).toThrow(ValidationError);
  });
});

describe("parseTokenListFilter", () => {
  it("parses comma lists, periods and epoch-ms or ISO bounds", () => {
    expect(
      parseTokenListFilter(
        { "filter[status]": "WAITING, TIMED_OUT,", "filter[tags]": "a,b", "filter[createdAt][period]": "1d", "filter[createdAt][to]": "2026-01-02" },
        NOW,
      ),
    ).toEqual({ statuses: ["WAITING", "TIMED_OUT"], tags: ["a", "b"], createdFrom: new Date("2025-12-31T00:00:00.000Z"), createdTo: new Date("2026-01-02") });
    expect(parseTokenListFilter({ "filter[createdAt][from]": String(NOW.getTime()) }, NOW).createdFrom).toEqual(NOW);
    expect(parseTokenListFilter({}, NOW)).toEqual({});
  });

  it("rejects unknown statuses and periods outside 1h, 1d, 7d, 30d", () => {
    expect(() => parseTokenListFilter({ "filter[status]": "PENDING" }, NOW)).toThrow(/PENDING/);
    expect(() => parseTokenListFilter({ "filter[createdAt][period]": "2h" }, NOW)).toThrow(/1h, 1d, 7d, 30d/);
    expect(() => parseTokenListFilter({ "filter[createdAt][from]": "soon" }, NOW)).toThrow(ValidationError);
  });
});
