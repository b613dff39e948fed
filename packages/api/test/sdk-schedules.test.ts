import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configure, NotFoundError, schedules, UnprocessableEntityError } from "@trigger.dev/sdk";
import { syncDeclarativeSchedules } from "@svc/runtime/engine";
import { startTestApi, type TestApi } from "./harness.ts";
import { registerTask } from "./schedules-helpers.ts";

// The published SDK, unchanged, against svc on a real port.
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
  const baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  await registerTask(api, api.project.environments.dev.id, "hello-world");
});
afterAll(async () => api?.close());

describe("@trigger.dev/sdk schedules.* against svc", () => {
  it("create, upsert, retrieve, update, deactivate, activate, del", async () => {
    const created = await schedules.create({ task: "hello-world", cron: "0 * * * *", deduplicationKey: "dk-1", externalId: "user-1", timezone: "Europe/London" });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^sched_/),
      type: "IMPERATIVE",
      task: "hello-world",
      active: true,
      deduplicationKey: "dk-1",
      externalId: "user-1",
      generator: { type: "CRON", expression: "0 * * * *", description: "Every hour" },
      timezone: "Europe/London",
      environments: [{ id: api.project.environments.dev.id, type: "DEVELOPMENT", userName: null }],
    });
    expect(created.nextRun).toBeInstanceOf(Date);

    const upserted = await schedules.create({ task: "hello-world", cron: "30 * * * *", deduplicationKey: "dk-1" });
    expect(upserted).toMatchObject({ id: created.id, generator: { expression: "30 * * * *" } });

    expect((await schedules.retrieve(created.id)).id).toBe(created.id);
    expect((await schedules.retrieve("dk-1")).id).toBe(created.id);

    const updated = await schedules.update(created.id, { task: "hello-world", cron: "15 * * * *", timezone: "UTC" });
    expect(updated).toMatchObject({ id: created.id, generator: { expression: "15 * * * *", description: "At 15 minutes past the hour" }, timezone: "UTC" });

    expect((await schedules.deactivate(created.id)).active).toBe(false);
    expect((await schedules.activate(created.id)).active).toBe(true);
    expect(await schedules.del(created.id)).toEqual({ id: created.id });
    await expect(schedules.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("lists with page/perPage and iterates every page", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await schedules.create({ task: "hello-world", cron: `${i} * * * *`, deduplicationKey: `list-${i}` })).id);
    const first = await schedules.list({ perPage: 1, page: 1 });
    expect(first.data).toHaveLength(1);
    const seen: string[] = [];
    for await (const s of schedules.list({ perPage: 1 })) seen.push(s.id);
    expect(seen.sort()).toEqual([...ids].sort());
    const all = await schedules.list();
    expect(all.data.map((s) => s.id).sort()).toEqual([...ids].sort());
    for (const id of ids) await schedules.del(id);
  });

  it("shows declarative schedules and refuses to change them", async () => {
    await syncDeclarativeSchedules(api.db.pool, api.project.environments.dev.id, [{ id: "nightly", cron: "0 3 * * *" }], new Date());
    const page = await schedules.list();
    const decl = page.data.find((s) => s.task === "nightly")!;
    expect(decl.type).toBe("DECLARATIVE");
    expect(decl.deduplicationKey).toBeNull();
    await expect(schedules.update(decl.id, { task: "nightly", cron: "0 4 * * *" })).rejects.toThrow(/Cannot update a declarative schedule/);
    await expect(schedules.deactivate(decl.id)).rejects.toBeInstanceOf(UnprocessableEntityError);
    await expect(schedules.del(decl.id)).rejects.toBeInstanceOf(UnprocessableEntityError);
  });

  it("surfaces validation errors as UnprocessableEntityError with the server's message", async () => {
    await expect(schedules.create({ task: "hello-world", cron: "0 0 * * * *", deduplicationKey: "x" })).rejects.toThrow(/CRON expressions with seconds are not allowed/);
    await expect(schedules.create({ task: "hello-world", cron: "0 * * * *", deduplicationKey: "x", timezone: "Nope/Nope" })).rejects.toBeInstanceOf(UnprocessableEntityError);
    await expect(schedules.create({ task: "missing", cron: "0 * * * *", deduplicationKey: "x" })).rejects.toThrow(/Task with identifier missing not found/);
  });

  it("lists timezones", async () => {
    const { timezones } = await schedules.timezones();
    expect(timezones).toContain("UTC");
    expect((await schedules.timezones({ excludeUtc: true })).timezones).not.toContain("UTC");
  });
});
