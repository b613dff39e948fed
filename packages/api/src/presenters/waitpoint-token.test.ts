import { describe, expect, it } from "vitest";
import type { WaitpointRow } from "@svc/runtime/engine";
import { presentTokenDetail, presentTokenItem } from "./waitpoint-token.ts";

const NOW = new Date("2026-01-01T00:00:00.000Z");

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
