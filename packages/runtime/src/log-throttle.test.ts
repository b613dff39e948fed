import { describe, expect, it } from "vitest";
import { FakeClock } from "./clock.ts";
import { LogThrottle } from "./log-throttle.ts";

describe("LogThrottle", () => {
  it("lets one message of a kind through per interval and counts the ones held back", () => {
    const clock = new FakeClock(0);
    const throttle = new LogThrottle(clock, 10_000);
    expect(throttle.pass("pool")).toEqual({ pass: true, suppressed: 0 });
    expect(throttle.pass("pool")).toEqual({ pass: false });
    expect(throttle.pass("pool")).toEqual({ pass: false });
    expect(throttle.pass("timers")).toEqual({ pass: true, suppressed: 0 });
    clock.advance(9_999);
    expect(throttle.pass("pool")).toEqual({ pass: false });
    clock.advance(1);
    expect(throttle.pass("pool")).toEqual({ pass: true, suppressed: 3 });
  });
});
