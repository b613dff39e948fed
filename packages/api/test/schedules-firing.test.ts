import { decodePacket } from "@svc/runtime/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "@svc/runtime/db";
import { dueSchedules, fireSchedule, type EngineDeps, type ScheduleRow } from "@svc/runtime/engine";
import { wakeDispatcher, type ConnectedEngine } from "@svc/runtime/testing";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { registerTask, scheduleClient } from "./schedules-helpers.ts";

// Firing is driven by calling dueSchedules.fire with a fake clock: no sleeping.
let api: TestApi;
let dev: ReturnType<typeof scheduleClient>;
/** A second "worker": its own pool, sharing only the database. */
let other: EngineDeps;
let otherConnection: ConnectedEngine;
const clock = new FakeClock(new Date("2025-01-01T10:15:00Z"));

beforeAll(async () => {
  api = await startTestApi({ clock });
  dev = scheduleClient(api);
  await registerTask(api, api.project.environments.dev.id, "tick-task");
  otherConnection = await api.connect({ poolMax: 5, dispatcher: wakeDispatcher });
  other = otherConnection.engine;
});
afterAll(async () => {
  await otherConnection?.close();
  await api?.close();
});

interface RunPayload {
  scheduleId: string;
  type: string;
  timestamp: string;
  lastTimestamp?: string;
  externalId?: string;
  timezone: string;
  upcoming: string[];
}

async function runsOf(scheduleId: string): Promise<{ id: string; task_identifier: string; status: string; payload: RunPayload; payload_type: string }[]> {
  const { rows } = await api.db.pool.query(
    `SELECT id, task_identifier, status, payload, payload_type FROM runs WHERE schedule_id = $1 ORDER BY created_at, id`,
    [scheduleId],
  );
  return rows.map((r) => ({ ...r, payload: JSON.parse(JSON.stringify(decodePacket({ data: r.payload, type: r.payload_type }))) }));
}

const fire = (deps: EngineDeps = api.engine) => dueSchedules.fire(deps, clock.now(), 100);

describe("firing schedules", () => {
  it("triggers one run per tick carrying the scheduled-task payload", async () => {
    clock.set(new Date("2025-01-01T10:15:00Z"));
    const schedule = (await dev.create({ task: "tick-task", cron: "*/5 * * * *", externalId: "user-7" })).json();
    expect(await fire()).toBe(0);

    clock.set(new Date("2025-01-01T10:20:00.250Z"));
    await fire();
    expect(await fire()).toBe(0);
    let runs = await runsOf(schedule.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ task_identifier: "tick-task", status: "QUEUED", payload_type: "application/super+json" });
    expect(runs[0]!.payload).toEqual({
      scheduleId: schedule.id,
      type: "IMPERATIVE",
      timestamp: "2025-01-01T10:20:00.000Z",
      externalId: "user-7",
      timezone: "UTC",
      upcoming: Array.from({ length: 10 }, (_, i) => new Date(Date.parse("2025-01-01T10:25:00Z") + i * 300_000).toISOString()),
    });

    clock.set(new Date("2025-01-01T10:25:00Z"));
    await fire();
    runs = await runsOf(schedule.id);
    expect(runs).toHaveLength(2);
    expect(runs[1]!.payload).toMatchObject({ timestamp: "2025-01-01T10:25:00.000Z", lastTimestamp: "2025-01-01T10:20:00.000Z" });
    expect((await dev.retrieve(schedule.id)).json().nextRun).toBe("2025-01-01T10:30:00.000Z");
    expect(await dueSchedules.nextDue(api.db.pool)).toEqual(new Date("2025-01-01T10:30:00Z"));
    await dev.del(schedule.id);
  });

  it("fires each tick exactly once when two workers fire concurrently, many times", async () => {
    clock.set(new Date("2025-02-01T00:00:30Z"));
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await dev.create({ task: "tick-task", cron: "* * * * *", deduplicationKey: `race-${i}` })).json().id);
    const ticks: string[] = [];
    for (let minute = 1; minute <= 5; minute++) {
      clock.set(new Date(Date.parse("2025-02-01T00:00:00Z") + minute * 60_000 + 10));
      ticks.push(new Date(Date.parse("2025-02-01T00:00:00Z") + minute * 60_000).toISOString());
      const handled = await Promise.all(Array.from({ length: 12 }, (_, i) => fire(i % 2 === 0 ? api.engine : other)));
      expect(handled.reduce((a, b) => a + b, 0)).toBe(ids.length);
    }
    for (const id of ids) {
      const runs = await runsOf(id);
      expect(runs.map((r) => r.payload.timestamp)).toEqual(ticks);
    }
    for (const id of ids) await dev.del(id);
  });

  it("cannot create a second run for a tick even if a stale claim fires it again", async () => {
    clock.set(new Date("2025-03-01T00:00:00Z"));
    const schedule = (await dev.create({ task: "tick-task", cron: "0 * * * *" })).json();
    const { rows } = await api.db.pool.query<ScheduleRow>(`SELECT * FROM schedules WHERE id = $1`, [schedule.id]);
    clock.set(new Date("2025-03-01T01:00:05Z"));
    expect(await fire()).toBe(1);
    // A process that read the row before the first fire committed (lost lock, clock skew) tries again.
    const outcome = await withTransaction(other.db, (tx) => fireSchedule(other, tx, rows[0]!, clock.now()));
    expect(outcome).toMatchObject({ kind: "already-fired", tick: new Date("2025-03-01T01:00:00Z") });
    expect(await runsOf(schedule.id)).toHaveLength(1);
    await dev.del(schedule.id);
  });

  it("fires only the latest missed tick after a long gap, never a burst", async () => {
    clock.set(new Date("2025-04-01T00:00:00Z"));
    const schedule = (await dev.create({ task: "tick-task", cron: "* * * * *" })).json();
    clock.set(new Date("2025-04-04T07:42:31Z"));
    expect(await fire()).toBe(1);
    expect(await fire()).toBe(0);
    const runs = await runsOf(schedule.id);
    expect(runs.map((r) => r.payload.timestamp)).toEqual(["2025-04-04T07:42:00.000Z"]);
    expect((await dev.retrieve(schedule.id)).json().nextRun).toBe("2025-04-04T07:43:00.000Z");
    await dev.del(schedule.id);
  });

  it("never fires an inactive schedule, and re-activation does not replay the ticks it missed", async () => {
    clock.set(new Date("2025-05-01T00:00:00Z"));
    const schedule = (await dev.create({ task: "tick-task", cron: "*/10 * * * *" })).json();
    await dev.deactivate(schedule.id);
    for (let i = 1; i <= 6; i++) {
      clock.set(new Date(Date.parse("2025-05-01T00:00:00Z") + i * 600_000 + 1));
      await fire();
    }
    expect(await runsOf(schedule.id)).toHaveLength(0);
    expect(await dueSchedules.nextDue(api.db.pool)).toBeNull();
    const on = (await dev.activate(schedule.id)).json();
    expect(on.nextRun).toBe("2025-05-01T01:10:00.000Z");
    await fire();
    expect(await runsOf(schedule.id)).toHaveLength(0);
    clock.set(new Date("2025-05-01T01:10:00Z"));
    await fire();
    expect((await runsOf(schedule.id)).map((r) => r.payload.timestamp)).toEqual(["2025-05-01T01:10:00.000Z"]);
    await dev.del(schedule.id);
  });

  it("never fires a deleted schedule", async () => {
    clock.set(new Date("2025-05-02T00:00:00Z"));
    const schedule = (await dev.create({ task: "tick-task", cron: "* * * * *" })).json();
    await dev.del(schedule.id);
    clock.advance(3_600_000);
    expect(await fire()).toBe(0);
    expect(await runsOf(schedule.id)).toHaveLength(0);
  });

  it("lets runs.list find a schedule's runs and runs.retrieve show the schedule", async () => {
    clock.set(new Date("2025-06-01T00:00:00Z"));
    const schedule = (await dev.create({ task: "tick-task", cron: "0 * * * *", externalId: "acct-3" })).json();
    const decoy = (await dev.create({ task: "tick-task", cron: "0 * * * *" })).json();
    for (let hour = 1; hour <= 3; hour++) {
      clock.set(new Date(Date.parse("2025-06-01T00:00:00Z") + hour * 3_600_000));
      await fire();
    }
    const expected = (await runsOf(schedule.id)).map((r) => r.id).reverse();
    expect(expected).toHaveLength(3);
    const list = await api.app.inject({ method: "GET", url: `/api/v1/runs?filter[schedule]=${schedule.id}`, headers: api.devAuth });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((r: { id: string }) => r.id)).toEqual(expected);
    const run = await api.app.inject({ method: "GET", url: `/api/v3/runs/${expected[0]}`, headers: api.devAuth });
    expect(run.json()).toMatchObject({
      payload: { scheduleId: schedule.id, externalId: "acct-3", timestamp: "2025-06-01T03:00:00.000Z" },
      schedule: { id: schedule.id, externalId: "acct-3", generator: { type: "CRON", expression: "0 * * * *", description: "Every hour" } },
    });
    await dev.del(schedule.id);
    await dev.del(decoy.id);
  });

  // Europe/Berlin: 2025-03-30 02:00 CET → 03:00 CEST; 2025-10-26 03:00 CEST → 02:00 CET.
  it.each([
    ["spring-forward", "2025-03-29T00:00:00Z", ["2025-03-29T01:30:00.000Z", "2025-03-30T01:30:00.000Z", "2025-03-31T00:30:00.000Z"]],
    ["fall-back", "2025-10-25T00:00:00Z", ["2025-10-25T00:30:00.000Z", "2025-10-26T00:30:00.000Z", "2025-10-27T01:30:00.000Z"]],
  ])("fires 30 2 * * * in Europe/Berlin once a day across %s", async (_name, start, expected) => {
    clock.set(new Date(start));
    const schedule = (await dev.create({ task: "tick-task", cron: "30 2 * * *", timezone: "Europe/Berlin" })).json();
    // A worker polling every 10 minutes for three days.
    for (let step = 1; step <= 3 * 144; step++) {
      clock.set(new Date(Date.parse(start) + step * 600_000));
      await fire(step % 2 === 0 ? api.engine : other);
    }
    const runs = await runsOf(schedule.id);
    expect(runs.map((r) => r.payload.timestamp)).toEqual(expected);
    expect(runs.every((r) => r.payload.timezone === "Europe/Berlin")).toBe(true);
    await dev.del(schedule.id);
  });
});
