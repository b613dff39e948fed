import { describe, expect, it } from "vitest";
import { decideAfterFailure, MAX_RETRY_DELAY_MS } from "./retry-policy.ts";

const now = new Date("2026-11-23T00:00:00Z");
const noJitter = () => 0;

describe("decideAfterFailure", () => {
  it("backs off exponentially from minTimeout, capped at maxTimeout", () => {
    const policy = { maxAttempts: 10, minTimeoutInMs: 1000, factor: 2, maxTimeoutInMs: 5000, randomize: false };
    const delays = [1, 2, 3, 4].map((attempt) => decideAfterFailure(attempt, policy, null, now));
    expect(delays.map((d) => (d.kind === "retry" ? d.delayMs : null))).toEqual([1000, 2000, 4000, 5000]);
  });

  it("caps at 60 s by default (the README's task retry default), and never yields NaN", () => {
    const d = decideAfterFailure(20, { maxAttempts: 30, randomize: false }, null, now);
    expect(d).toMatchObject({ kind: "retry", delayMs: 60_000 });
    // ∞ × 0 is NaN: the default cap instead.
    const odd = decideAfterFailure(2, { minTimeoutInMs: Number.POSITIVE_INFINITY, factor: 0, maxTimeoutInMs: Number.POSITIVE_INFINITY, randomize: false }, null, now);
    expect(odd).toMatchObject({ kind: "retry", delayMs: 60_000 });
  });

  it("jitters into [delay, 2 × delay) when randomized", () => {
    const d = decideAfterFailure(1, { minTimeoutInMs: 1000, randomize: true }, null, now, () => 0.5);
    expect(d).toMatchObject({ kind: "retry", delayMs: 1500 });
  });

  it("fails once the attempts are used up (a trigger's maxAttempts wins over the task's)", () => {
    expect(decideAfterFailure(3, { maxAttempts: 3 }, null, now, noJitter).kind).toBe("fail");
    expect(decideAfterFailure(3, { maxAttempts: 3 }, 5, now, noJitter).kind).toBe("retry");
  });

  it("does not retry an error that says not to", () => {
    expect(decideAfterFailure(1, undefined, null, now, noJitter, false).kind).toBe("fail");
  });

  it("takes defaults for settings passed as undefined, null or NaN (never a NaN delay or endless retries)", () => {
    for (const value of [undefined, null, Number.NaN]) {
      const policy = { maxAttempts: value, minTimeoutInMs: value, factor: value, maxTimeoutInMs: value, randomize: false } as never;
      expect(decideAfterFailure(1, policy, null, now)).toEqual({ kind: "retry", at: new Date(now.getTime() + 1000), delayMs: 1000 });
      expect(decideAfterFailure(3, policy, null, now).kind).toBe("fail");
    }
  });

  it("never schedules further out than a year", () => {
    const d = decideAfterFailure(50, { maxAttempts: 100, factor: 10, maxTimeoutInMs: Number.POSITIVE_INFINITY, randomize: false }, null, now);
    expect(d).toMatchObject({ kind: "retry", delayMs: MAX_RETRY_DELAY_MS });
  });
});
