import { describe, expect, it } from "vitest";
import { isTask } from "./task.ts";
import { schedules, toScheduledPayload, type ScheduledTaskPayload } from "./schedules-task.ts";

describe("schedules.task", () => {
  it("declares a SCHEDULED task with its cron (UTC by default)", () => {
    const t = schedules.task({ id: "hourly", cron: "0 * * * *", run: async () => "ok" });
    expect(isTask(t)).toBe(true);
    expect(t.kind).toBe("SCHEDULED");
    expect(t.schedule).toEqual({ cron: "0 * * * *", timezone: "UTC" });
    expect(t).not.toHaveProperty("cron");
  });

  it("accepts { pattern, timezone } and no cron at all (imperative schedules only)", () => {
    const berlin = schedules.task({ id: "nightly", cron: { pattern: "30  2 * * *", timezone: "Europe/Berlin" }, run: () => 1 });
    expect(berlin.schedule).toEqual({ cron: "30 2 * * *", timezone: "Europe/Berlin" });
    const bare = schedules.task({ id: "per-user", run: () => 1, retry: { maxAttempts: 1 } });
    expect(bare.kind).toBe("SCHEDULED");
    expect(bare.schedule).toBeUndefined();
    expect(bare.retry).toEqual({ maxAttempts: 1 });
  });

  it("throws at declaration for an invalid cron or timezone, naming the task", () => {
    expect(() => schedules.task({ id: "secs", cron: "0 0 * * * *", run: () => 1 })).toThrow(
      'schedules.task("secs"): Invalid cron expression: CRON expressions with seconds are not allowed',
    );
    expect(() => schedules.task({ id: "tz", cron: { pattern: "0 * * * *", timezone: "Moon/Base" }, run: () => 1 })).toThrow(/schedules\.task\("tz"\): Invalid IANA timezone/);
    expect(() => schedules.task({ id: "", cron: "0 * * * *", run: () => 1 })).toThrow(/`id` is required/);
  });

  it("hands run() Dates for the timestamps of the stored payload", async () => {
    let received: ScheduledTaskPayload | undefined;
    const t = schedules.task({ id: "dates", cron: "0 * * * *", run: (payload) => void (received = payload) });
    const stored = {
      scheduleId: "sched_1",
      type: "DECLARATIVE",
      timestamp: "2025-01-01T10:00:00.000Z",
      lastTimestamp: "2025-01-01T09:00:00.000Z",
      timezone: "UTC",
      upcoming: ["2025-01-01T11:00:00.000Z"],
    };
    await t.run(stored as never, { ctx: {} as never, signal: new AbortController().signal });
    expect(received).toEqual({
      scheduleId: "sched_1",
      type: "DECLARATIVE",
      timestamp: new Date("2025-01-01T10:00:00.000Z"),
      lastTimestamp: new Date("2025-01-01T09:00:00.000Z"),
      timezone: "UTC",
      upcoming: [new Date("2025-01-01T11:00:00.000Z")],
    });
    expect(toScheduledPayload({ timestamp: "2025-01-01T10:00:00.000Z", upcoming: [] })).not.toHaveProperty("lastTimestamp");
    expect(toScheduledPayload("not-an-object")).toBe("not-an-object");
  });
});
