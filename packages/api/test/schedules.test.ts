import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { registerTask, scheduleClient } from "./schedules-helpers.ts";

let api: TestApi;
let dev: ReturnType<typeof scheduleClient>;
const clock = new FakeClock(new Date("2025-01-01T10:15:00Z"));

beforeAll(async () => {
  api = await startTestApi({ clock });
  dev = scheduleClient(api);
  await registerTask(api, api.project.environments.dev.id, "report");
  await registerTask(api, api.project.environments.dev.id, "plain-task", "STANDARD");
  await registerTask(api, api.project.environments.staging.id, "report");
});
afterAll(async () => api?.close());

describe("imperative schedules", () => {
  it("creates a schedule and returns Trigger.dev's ScheduleObject", async () => {
    const res = await dev.create({ task: "report", cron: "0 * * * *", externalId: "user-1", timezone: "Europe/London" });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      id: expect.stringMatching(/^sched_[0-9a-z]{21}$/),
      type: "IMPERATIVE",
      task: "report",
      active: true,
      deduplicationKey: null,
      externalId: "user-1",
      generator: { type: "CRON", expression: "0 * * * *", description: "Every hour" },
      timezone: "Europe/London",
      nextRun: "2025-01-01T11:00:00.000Z",
      environments: [{ id: api.project.environments.dev.id, type: "DEVELOPMENT", userName: null }],
    });
    expect((await dev.retrieve(body.id)).json()).toEqual(body);
  });

  it("defaults the timezone to UTC and computes nextRun in the schedule's timezone", async () => {
    const utc = (await dev.create({ task: "report", cron: "0 9 * * *" })).json();
    expect(utc).toMatchObject({ timezone: "UTC", nextRun: "2025-01-02T09:00:00.000Z" });
    const ny = (await dev.create({ task: "report", cron: "0 9 * * *", timezone: "America/New_York" })).json();
    expect(ny).toMatchObject({ timezone: "America/New_York", nextRun: "2025-01-01T14:00:00.000Z" });
  });

  it("upserts on deduplicationKey, which also addresses the schedule in paths", async () => {
    const first = (await dev.create({ task: "report", cron: "0 * * * *", deduplicationKey: "dk-1", externalId: "user-1", timezone: "Europe/London" })).json();
    const second = (await dev.create({ task: "report", cron: "30 * * * *", deduplicationKey: "dk-1" })).json();
    expect(second).toMatchObject({ id: first.id, deduplicationKey: "dk-1", externalId: null, timezone: "UTC", generator: { expression: "30 * * * *" } });
    expect(second.nextRun).toBe("2025-01-01T10:30:00.000Z");
    expect((await dev.retrieve("dk-1")).json().id).toBe(first.id);
    const { rows } = await api.db.pool.query(`SELECT count(*)::int AS n FROM schedules WHERE deduplication_key = 'dk-1'`);
    expect(rows[0].n).toBe(1);
  });

  it("updates task, cron, timezone and externalId; nextRun follows the new cron", async () => {
    const created = (await dev.create({ task: "report", cron: "0 * * * *", deduplicationKey: "to-update" })).json();
    const res = await dev.update(created.id, { task: "report", cron: "15 12 * * *", timezone: "Asia/Tokyo", externalId: "ext-9" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      id: created.id,
      generator: { expression: "15 12 * * *", description: "At 12:15 PM" },
      timezone: "Asia/Tokyo",
      externalId: "ext-9",
      deduplicationKey: "to-update",
      nextRun: "2025-01-02T03:15:00.000Z",
    });
    const byKey = await dev.update("to-update", { task: "report", cron: "15 12 * * *" });
    expect(byKey.json()).toMatchObject({ id: created.id, timezone: "UTC", externalId: null, nextRun: "2025-01-01T12:15:00.000Z" });
  });

  it("deactivates and activates; repeating either changes nothing", async () => {
    const created = (await dev.create({ task: "report", cron: "0 0 * * *" })).json();
    const off = await dev.deactivate(created.id);
    expect(off.statusCode).toBe(200);
    expect(off.json()).toMatchObject({ id: created.id, active: false, nextRun: "2025-01-02T00:00:00.000Z" });
    expect((await dev.deactivate(created.id)).json().active).toBe(false);
    clock.advance(2 * 86_400_000);
    const on = (await dev.activate(created.id)).json();
    expect(on).toMatchObject({ active: true, nextRun: "2025-01-04T00:00:00.000Z" });
    expect((await dev.activate(created.id)).json()).toEqual(on);
    clock.set(new Date("2025-01-01T10:15:00Z"));
  });

  it("deletes a schedule, after which it is gone", async () => {
    const created = (await dev.create({ task: "report", cron: "0 0 * * *", deduplicationKey: "to-delete" })).json();
    const res = await dev.del("to-delete");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: created.id });
    const gone = await dev.retrieve(created.id);
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toEqual({ error: "Schedule not found" });
    expect((await dev.del(created.id)).statusCode).toBe(404);
  });

  it("lists with offset pages, newest first, perPage capped at 100", async () => {
    const staging = scheduleClient(api, { authorization: `Bearer ${api.project.environments.staging.secretKey}` });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await staging.create({ task: "report", cron: `${i} * * * *` })).json().id);
      clock.advance(1000);
    }
    const page1 = (await staging.list("?perPage=2")).json();
    expect(page1.pagination).toEqual({ currentPage: 1, totalPages: 3, count: 5 });
    expect(page1.data.map((s: { id: string }) => s.id)).toEqual([ids[4], ids[3]]);
    const page3 = (await staging.list("?perPage=2&page=3")).json();
    expect(page3.data.map((s: { id: string }) => s.id)).toEqual([ids[0]]);
    expect((await staging.list("?perPage=2&page=9")).json()).toEqual({ data: [], pagination: { currentPage: 9, totalPages: 3, count: 5 } });
    const all = (await staging.list()).json();
    expect(all.data).toHaveLength(5);
    expect(all.pagination).toEqual({ currentPage: 1, totalPages: 1, count: 5 });
    expect((await staging.list("?perPage=500")).json().data).toHaveLength(5);
  });

  it("keeps environments apart: another environment's schedule is a 404", async () => {
    const created = (await dev.create({ task: "report", cron: "0 0 * * *", deduplicationKey: "dev-only" })).json();
    const prod = scheduleClient(api, { authorization: `Bearer ${api.project.environments.prod.secretKey}` });
    for (const res of [
      await prod.retrieve(created.id),
      await prod.retrieve("dev-only"),
      await prod.update(created.id, { task: "report", cron: "0 0 * * *" }),
      await prod.activate(created.id),
      await prod.deactivate(created.id),
      await prod.del(created.id),
    ]) {
      expect(res.statusCode).toBe(404);
    }
    expect((await prod.list()).json().data).toEqual([]);
    expect((await dev.retrieve(created.id)).json().active).toBe(true);
  });

  it("accepts only secret keys", async () => {
    const none = scheduleClient(api, {});
    expect((await none.list()).statusCode).toBe(401);
    const pat = scheduleClient(api, { authorization: "Bearer svc_pat_0123456789abcdef" });
    expect((await pat.list()).statusCode).toBe(401);
    const jwt = scheduleClient(api, { authorization: "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln" });
    expect((await jwt.create({ task: "report", cron: "0 * * * *" })).statusCode).toBe(401);
  });

  it("lists timezones without authentication", async () => {
    const res = await api.app.inject({ method: "GET", url: "/api/v1/timezones" });
    expect(res.statusCode).toBe(200);
    expect(res.json().timezones).toEqual(expect.arrayContaining(["UTC", "Europe/Berlin", "America/New_York"]));
    const noUtc = (await api.app.inject({ method: "GET", url: "/api/v1/timezones?excludeUtc=true" })).json();
    expect(noUtc.timezones).not.toContain("UTC");
  });
});

describe("bad input on every schedule endpoint", () => {
  const expectError = (res: { statusCode: number; json(): { error?: unknown } }, status: number, message?: RegExp) => {
    expect(res.statusCode).toBe(status);
    expect(typeof res.json().error).toBe("string");
    if (message) expect(res.json().error).toMatch(message);
  };

  it("create: shapes are 400, cron/timezone/task problems are 422 naming the problem", async () => {
    expectError(await dev.create(undefined), 400, /Request body is empty/);
    expectError(await api.app.inject({ method: "POST", url: "/api/v1/schedules", headers: { ...api.devAuth, "content-type": "application/json" }, payload: "{nope" }), 400, /Invalid JSON/);
    expectError(await dev.create({}), 400, /task/);
    expectError(await dev.create({ task: 1, cron: "0 * * * *" }), 400, /task/);
    expectError(await dev.create({ task: "report", cron: 5 }), 400, /cron/);
    expectError(await dev.create({ task: "report", cron: "0 * * * *", deduplicationKey: "" }), 400, /deduplicationKey/);
    expectError(await dev.create({ task: "report", cron: "0 * * * *", timezone: 7 }), 400, /timezone/);
    expectError(await dev.create({ task: "x".repeat(200), cron: "0 * * * *" }), 400, /task/);
    expectError(await dev.create([1, 2]), 400);
    // Stored as sent or refused: the driver would turn half a surrogate pair into U+FFFD.
    expectError(await dev.create({ task: "report", cron: "0 * * * *", externalId: "user-\ud83d" }), 400, /externalId: must be valid Unicode/);
    expectError(await dev.create({ task: "report", cron: "0 * * * *", deduplicationKey: "dedup-\ud83d" }), 400, /deduplicationKey: must be valid Unicode/);
    expectError(await dev.create({ task: "report", cron: "0 * * * *", externalId: "a\u0000b" }), 400, /externalId: must not contain NUL/);
    expectError(await dev.create({ task: "report", cron: "0 0 * * * *" }), 422, /CRON expressions with seconds are not allowed/);
    expectError(await dev.create({ task: "report", cron: "61 * * * *" }), 422, /Invalid cron expression "61 \* \* \* \*"/);
    expectError(await dev.create({ task: "report", cron: "" }), 422, /Invalid cron expression/);
    expectError(await dev.create({ task: "report", cron: "every hour" }), 422, /expected 5 fields/);
    expectError(await dev.create({ task: "report", cron: "0 * * * *", timezone: "Mars/Olympus" }), 422, /Invalid IANA timezone: 'Mars\/Olympus'/);
    expectError(await dev.create({ task: "nope", cron: "0 * * * *" }), 422, /Task with identifier nope not found/);
    expectError(await dev.create({ task: "plain-task", cron: "0 * * * *" }), 422, /Task with identifier plain-task is not a scheduled task/);
  });

  it("list: bad page numbers are 400", async () => {
    for (const q of ["?page=0", "?page=abc", "?perPage=0", "?perPage=-1", "?perPage=1.5", "?page=1e300"]) {
      expectError(await dev.list(q), 400);
    }
  });

  it("retrieve, update, activate, deactivate, delete: unknown ids are 404, bad bodies 400/422", async () => {
    for (const res of [
      await dev.retrieve("sched_doesnotexist"),
      await dev.update("sched_doesnotexist", { task: "report", cron: "0 * * * *" }),
      await dev.activate("sched_doesnotexist"),
      await dev.deactivate("sched_doesnotexist"),
      await dev.del("sched_doesnotexist"),
    ]) {
      expectError(res, 404, /Schedule not found/);
    }
    expectError(await dev.retrieve("x".repeat(300)), 400);
    const created = (await dev.create({ task: "report", cron: "0 * * * *" })).json();
    expectError(await dev.update(created.id, undefined), 400, /Request body is empty/);
    expectError(await dev.update(created.id, { cron: "0 * * * *" }), 400, /task/);
    expectError(await dev.update(created.id, { task: "report", cron: "0 0 * * * *" }), 422, /seconds/);
    expectError(await dev.update(created.id, { task: "report", cron: "0 * * * *", timezone: "Nowhere/City" }), 422, /Nowhere\/City/);
    expectError(await dev.update(created.id, { task: "ghost", cron: "0 * * * *" }), 422, /Task with identifier ghost not found/);
    expect((await dev.retrieve(created.id)).json().generator.expression).toBe("0 * * * *");
  });

  it("timezones: a bad excludeUtc is 400", async () => {
    expectError(await api.app.inject({ method: "GET", url: "/api/v1/timezones?excludeUtc=maybe" }), 400);
  });
});
