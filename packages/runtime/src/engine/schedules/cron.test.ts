import { describe, expect, it } from "vitest";
import { describeCron, listTimezones, nextTick, parseCron, parseTimezone, planFire, upcomingTicks } from "./cron.ts";

const iso = (d: Date | null) => d?.toISOString() ?? null;

describe("parseCron", () => {
  it("accepts 5-field expressions and normalises whitespace", () => {
    expect(parseCron("0 * * * *")).toBe("0 * * * *");
    expect(parseCron("  */5   9-17 * *  1-5 ")).toBe("*/5 9-17 * * 1-5");
    expect(parseCron("0 0 L * *")).toBe("0 0 L * *");
    expect(parseCron("0 0 * * MON")).toBe("0 0 * * MON");
  });

  it("refuses a seconds field with the message Trigger.dev uses", () => {
    expect(() => parseCron("0 0 * * * *")).toThrow(/CRON expressions with seconds are not allowed/);
  });

  it("names the problem of an invalid expression", () => {
    expect(() => parseCron("")).toThrow(/Invalid cron expression: the expression is empty/);
    expect(() => parseCron("* * * *")).toThrow(/expected 5 fields .* got 4/);
    expect(() => parseCron("* * * * * * *")).toThrow(/got 7/);
    expect(() => parseCron("@daily")).toThrow(/got 1/);
    expect(() => parseCron("61 * * * *")).toThrow(/Invalid cron expression "61 \* \* \* \*": .*61/);
    expect(() => parseCron("0 0 30 2 *")).toThrow(/Invalid cron expression/);
    expect(() => parseCron("nope * * * *")).toThrow(/Invalid cron expression/);
  });
});

describe("parseTimezone", () => {
  it("defaults to UTC and canonicalises IANA names", () => {
    expect(parseTimezone(undefined)).toBe("UTC");
    expect(parseTimezone("Europe/Berlin")).toBe("Europe/Berlin");
    expect(parseTimezone("europe/berlin")).toBe("Europe/Berlin");
    expect(parseTimezone("America/New_York")).toBe("America/New_York");
  });

  it("refuses unknown names and raw offsets, naming them", () => {
    expect(() => parseTimezone("Mars/Olympus")).toThrow("Invalid IANA timezone: 'Mars/Olympus'");
    expect(() => parseTimezone("+05:00")).toThrow("Invalid IANA timezone: '+05:00'");
    expect(() => parseTimezone("")).toThrow("Invalid IANA timezone: ''");
  });

  it("lists UTC first unless excluded", () => {
    const all = listTimezones();
    expect(all[0]).toBe("UTC");
    expect(all).toContain("Europe/Berlin");
    expect(listTimezones({ excludeUtc: true })).not.toContain("UTC");
  });
});

describe("describeCron", () => {
  it("describes expressions in English with cronstrue", () => {
    expect(describeCron("0 * * * *")).toBe("Every hour");
    expect(describeCron("30 2 * * *")).toBe("At 02:30 AM");
  });
});

describe("planFire", () => {
  it("fires the due tick and moves to the next one", () => {
    const plan = planFire("0 * * * *", "UTC", new Date("2025-01-01T10:00:00Z"), new Date("2025-01-01T10:00:03Z"));
    expect(iso(plan.tick)).toBe("2025-01-01T10:00:00.000Z");
    expect(iso(plan.next)).toBe("2025-01-01T11:00:00.000Z");
  });

  it("fires only the latest missed tick after a long gap, then the next future one", () => {
    const plan = planFire("* * * * *", "UTC", new Date("2025-01-01T00:00:00Z"), new Date("2025-03-01T12:34:56Z"));
    expect(iso(plan.tick)).toBe("2025-03-01T12:34:00.000Z");
    expect(iso(plan.next)).toBe("2025-03-01T12:35:00.000Z");
    const yearly = planFire("0 0 1 1 *", "UTC", new Date("2020-01-01T00:00:00Z"), new Date("2025-06-01T00:00:00Z"));
    expect(iso(yearly.tick)).toBe("2025-01-01T00:00:00.000Z");
    expect(iso(yearly.next)).toBe("2026-01-01T00:00:00.000Z");
  });

  it("fires nothing before the due time", () => {
    const plan = planFire("0 * * * *", "UTC", new Date("2025-01-01T10:00:00Z"), new Date("2025-01-01T09:59:59Z"));
    expect(plan.tick).toBeNull();
    expect(iso(plan.next)).toBe("2025-01-01T10:00:00.000Z");
  });

  // Europe/Berlin: 2025-03-30 02:00 CET → 03:00 CEST; 2025-10-26 03:00 CEST → 02:00 CET.
  it("fires a time skipped by spring-forward once, at the pre-change instant (02:30 CET = 01:30 UTC)", () => {
    const ticks = walk("30 2 * * *", "Europe/Berlin", new Date("2025-03-28T12:00:00Z"), 4);
    expect(ticks).toEqual(["2025-03-29T01:30:00.000Z", "2025-03-30T01:30:00.000Z", "2025-03-31T00:30:00.000Z", "2025-04-01T00:30:00.000Z"]);
  });

  it("fires the repeated hour of fall-back once (the first 02:30)", () => {
    const ticks = walk("30 2 * * *", "Europe/Berlin", new Date("2025-10-24T12:00:00Z"), 4);
    expect(ticks).toEqual(["2025-10-25T00:30:00.000Z", "2025-10-26T00:30:00.000Z", "2025-10-27T01:30:00.000Z", "2025-10-28T01:30:00.000Z"]);
  });

  it("does not fire the second 02:30 of fall-back even when the first fired late", () => {
    // The worker fires the 00:30 UTC tick at 01:10 UTC, which is inside the repeated hour.
    const plan = planFire("30 2 * * *", "Europe/Berlin", new Date("2025-10-26T00:30:00Z"), new Date("2025-10-26T01:10:00Z"));
    expect(iso(plan.tick)).toBe("2025-10-26T00:30:00.000Z");
    expect(iso(plan.next)).toBe("2025-10-27T01:30:00.000Z");
  });

  it("keeps hourly schedules hourly across both changes (elapsed hours)", () => {
    const spring = walk("0 * * * *", "Europe/Berlin", new Date("2025-03-29T23:30:00Z"), 4);
    expect(spring).toEqual(["2025-03-30T00:00:00.000Z", "2025-03-30T01:00:00.000Z", "2025-03-30T02:00:00.000Z", "2025-03-30T03:00:00.000Z"]);
    const fall = walk("0 * * * *", "Europe/Berlin", new Date("2025-10-25T23:30:00Z"), 4);
    expect(fall).toEqual(["2025-10-26T00:00:00.000Z", "2025-10-26T01:00:00.000Z", "2025-10-26T02:00:00.000Z", "2025-10-26T03:00:00.000Z"]);
  });

  it("lists upcoming ticks in the schedule's timezone", () => {
    expect(upcomingTicks("0 9 * * *", "America/New_York", new Date("2025-03-08T00:00:00Z"), 3).map(iso)).toEqual([
      "2025-03-08T14:00:00.000Z",
      "2025-03-09T13:00:00.000Z",
      "2025-03-10T13:00:00.000Z",
    ]);
  });
});

/** Fires `count` ticks the way the worker does: each fire happens exactly at the due time. */
function walk(cron: string, timezone: string, from: Date, count: number): string[] {
  const fired: string[] = [];
  let due = nextTick(cron, timezone, from);
  for (let i = 0; i < count; i++) {
    const plan = planFire(cron, timezone, due, due);
    fired.push(iso(plan.tick)!);
    due = plan.next;
  }
  return fired;
}
