import { describe, expect, it } from "vitest";
import { ValidationError } from "../../errors.ts";
import { rescheduledTime } from "./reschedule.ts";

const now = new Date("2026-11-22T10:00:00Z");

describe("rescheduledTime", () => {
  it("reads a duration from now, a date, and a Date", () => {
    expect(rescheduledTime("1h30m", now)).toEqual(new Date("2026-11-22T11:30:00Z"));
    expect(rescheduledTime("2026-12-01T00:00:00Z", now)).toEqual(new Date("2026-12-01T00:00:00Z"));
    expect(rescheduledTime(new Date("2026-11-22T10:00:00.001Z"), now)).toEqual(new Date("2026-11-22T10:00:00.001Z"));
  });

  it("refuses a time that is not later than now, and text that is neither a duration nor a date", () => {
    expect(() => rescheduledTime("0s", now)).toThrow(new ValidationError("Invalid delay: 0s is not in the future"));
    expect(() => rescheduledTime(now, now)).toThrow(/is not in the future/);
    expect(() => rescheduledTime("2026-11-22T09:59:59Z", now)).toThrow(/is not in the future/);
    expect(() => rescheduledTime("soon", now)).toThrow(/"soon" is neither a duration/);
    expect(() => rescheduledTime("2026-02-30T00:00:00Z", now)).toThrow(/is not a date on the calendar/);
  });
});
