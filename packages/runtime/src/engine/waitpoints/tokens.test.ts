import { describe, expect, it } from "vitest";
import { UnprocessableError, ValidationError } from "../../errors.ts";
import { planToken } from "./create-token.ts";
import { parseTokenListFilter } from "./list-tokens.ts";
import { presentTokenDetail, presentTokenItem } from "./present-token.ts";
import type { WaitpointRow } from "./store.ts";

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

function row(overrides: Partial<WaitpointRow>): WaitpointRow {
  return {
    id: "waitpoint_1", environment_id: "env_1", type: "MANUAL", status: "WAITING", idempotency_key: null, idempotency_key_user_provided: false,
    idempotency_key_expires_at: null, inactive_idempotency_key: null, timeout_at: null, completed_at: null, output: null, output_type: null,
    output_is_error: false, tags: [], completed_by_run_id: null, completed_by_batch_id: null, created_at: NOW, ...overrides,
  };
}

describe("presenting tokens", () => {
  it("omits absent fields instead of sending null and sorts tags", () => {
    expect(presentTokenItem(row({ tags: ["b", "a"] }), "u")).toEqual({ id: "waitpoint_1", url: "u", status: "WAITING", tags: ["a", "b"], createdAt: NOW.toISOString() });
  });

  it("shows an expired user key from inactive_idempotency_key", () => {
    const item = presentTokenItem(row({ idempotency_key_user_provided: true, inactive_idempotency_key: "k", idempotency_key_expires_at: NOW }), "u");
    expect(item).toMatchObject({ idempotencyKey: "k", idempotencyKeyExpiresAt: NOW.toISOString() });
  });

  it("gives a timed-out token an error output even when none was stored", () => {
    const detail = presentTokenDetail(row({ status: "TIMED_OUT", timeout_at: NOW, completed_at: NOW }), "u");
    expect(detail.outputIsError).toBe(true);
    expect(JSON.parse(detail.output!)).toEqual({ name: "WaitpointTimeoutError", code: "WAITPOINT_TIMEOUT", message: `Waitpoint timed out at ${NOW.toISOString()}` });
  });
});
