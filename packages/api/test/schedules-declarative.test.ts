import { decodePacket } from "@svc/runtime/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dueSchedules, syncDeclarativeSchedules, UnprocessableError, ValidationError } from "@svc/runtime/engine";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { registerTask, scheduleClient } from "./schedules-helpers.ts";

let api: TestApi;
let dev: ReturnType<typeof scheduleClient>;
let envId: string;
const clock = new FakeClock(new Date("2025-06-01T08:00:00Z"));

beforeAll(async () => {
  api = await startTestApi({ clock });
  dev = scheduleClient(api);
  envId = api.project.environments.dev.id;
  await registerTask(api, envId, "imperative-task");
});
afterAll(async () => api?.close());

const sync = (tasks: { id: string; cron: string; timezone?: string }[]) => syncDeclarativeSchedules(api.db.pool, envId, tasks, clock.now());
const listAll = async () => (await dev.list("?perPage=100")).json().data as { id: string; type: string; task: string; generator: { expression: string }; timezone: string; nextRun: string }[];

describe("declarative schedules (schedules.task({ cron }))", () => {
  it("creates one DECLARATIVE schedule per task, listed beside imperative ones", async () => {
    const imperative = (await dev.create({ task: "imperative-task", cron: "0 12 * * *" })).json();
    const result = await sync([
      { id: "daily-digest", cron: "0 7 * * *" },
      { id: "berlin-nightly", cron: "30 2 * * *", timezone: "Europe/Berlin" },
    ]);
    expect(result.deleted).toEqual([]);
    const list = await listAll();
    expect(list).toHaveLength(3);
    expect(list.find((s) => s.id === imperative.id)?.type).toBe("IMPERATIVE");
    expect(list.find((s) => s.task === "daily-digest")).toMatchObject({
      type: "DECLARATIVE",
      generator: { expression: "0 7 * * *" },
      timezone: "UTC",
      nextRun: "2025-06-02T07:00:00.000Z",
    });
    expect(list.find((s) => s.task === "berlin-nightly")).toMatchObject({ type: "DECLARATIVE", timezone: "Europe/Berlin", nextRun: "2025-06-02T00:30:00.000Z" });
  });

  it("refuses to update, activate, deactivate or delete a declarative schedule with 422", async () => {
    const decl = (await listAll()).find((s) => s.task === "daily-digest")!;
    const update = await dev.update(decl.id, { task: "daily-digest", cron: "0 8 * * *" });
    expect(update.statusCode).toBe(422);
    expect(update.json().error).toMatch(/^Cannot update a declarative schedule/);
    expect(update.json().error).toMatch(/schedules\.task\("daily-digest"\)/);
    for (const [res, verb] of [
      [await dev.activate(decl.id), "activate"],
      [await dev.deactivate(decl.id), "deactivate"],
      [await dev.del(decl.id), "delete"],
    ] as const) {
      expect(res.statusCode).toBe(422);
      expect(res.json().error).toMatch(new RegExp(`^Cannot ${verb} a declarative schedule`));
    }
    expect((await dev.retrieve(decl.id)).json()).toMatchObject({ type: "DECLARATIVE", active: true, generator: { expression: "0 7 * * *" } });
  });

  it("documents the 422 of activate, deactivate, update and delete in the OpenAPI document", async () => {
    const paths = (await api.app.inject({ method: "GET", url: "/api/openapi.json" })).json().paths;
    for (const [path, method] of [
      ["/api/v1/schedules/{id}/activate", "post"],
      ["/api/v1/schedules/{id}/deactivate", "post"],
      ["/api/v1/schedules/{id}", "put"],
      ["/api/v1/schedules/{id}", "delete"],
    ] as const) {
      expect(paths[path][method].responses["422"], `${method} ${path}`).toEqual({ $ref: "#/components/responses/Unprocessable" });
    }
  });

  it("re-syncing keeps ids and due ticks, redefines changed crons and deletes dropped ones", async () => {
    const before = await listAll();
    const digest = before.find((s) => s.task === "daily-digest")!;
    const nightly = before.find((s) => s.task === "berlin-nightly")!;
    clock.advance(60_000);
    await sync([{ id: "daily-digest", cron: "0 7 * * *" }, { id: "berlin-nightly", cron: "30 2 * * *", timezone: "Europe/Berlin" }]);
    expect(await listAll()).toEqual(before);

    const result = await sync([{ id: "daily-digest", cron: "15 9 * * *" }]);
    expect(result.deleted).toEqual([nightly.id]);
    const after = await listAll();
    expect(after.map((s) => s.task).sort()).toEqual(["daily-digest", "imperative-task"]);
    expect(after.find((s) => s.task === "daily-digest")).toMatchObject({ id: digest.id, generator: { expression: "15 9 * * *" }, nextRun: "2025-06-01T09:15:00.000Z" });
    expect((await dev.retrieve(nightly.id)).statusCode).toBe(404);
  });

  it("rejects an invalid cron or timezone naming the task, before writing anything", async () => {
    const before = await listAll();
    await expect(sync([{ id: "ok", cron: "0 * * * *" }, { id: "bad-cron", cron: "0 0 * * * *" }])).rejects.toThrow(
      new UnprocessableError('schedules.task("bad-cron"): Invalid cron expression: CRON expressions with seconds are not allowed'),
    );
    await expect(sync([{ id: "bad-tz", cron: "0 * * * *", timezone: "Atlantis/Capital" }])).rejects.toThrow(/schedules\.task\("bad-tz"\): Invalid IANA timezone: 'Atlantis\/Capital'/);
    await expect(sync([{ id: "twice", cron: "0 * * * *" }, { id: "twice", cron: "5 * * * *" }])).rejects.toBeInstanceOf(ValidationError);
    expect(await listAll()).toEqual(before);
  });

  it("fires with type DECLARATIVE in the payload", async () => {
    clock.set(new Date("2025-06-01T09:15:00Z"));
    expect(await dueSchedules.fire(api.engine, clock.now(), 100)).toBe(1);
    const { rows } = await api.db.pool.query(`SELECT payload, payload_type FROM runs WHERE task_identifier = 'daily-digest'`);
    expect(rows).toHaveLength(1);
    expect(JSON.parse(JSON.stringify(decodePacket({ data: rows[0].payload, type: rows[0].payload_type })))).toMatchObject({ type: "DECLARATIVE", timestamp: "2025-06-01T09:15:00.000Z", timezone: "UTC" });
    expect(JSON.parse(JSON.stringify(decodePacket({ data: rows[0].payload, type: rows[0].payload_type })))).not.toHaveProperty("externalId");
  });

  it("an empty sync removes every declarative schedule of the environment only", async () => {
    const other = api.project.environments.prod.id;
    await syncDeclarativeSchedules(api.db.pool, other, [{ id: "daily-digest", cron: "0 7 * * *" }], clock.now());
    await sync([]);
    expect((await listAll()).map((s) => s.type)).toEqual(["IMPERATIVE"]);
    const { rows } = await api.db.pool.query(`SELECT count(*)::int AS n FROM schedules WHERE environment_id = $1`, [other]);
    expect(rows[0].n).toBe(1);
  });
});
