// Named concurrency limits through svc's own client (`concurrencyLimits`, `ApiClient.concurrencyLimits`), against the real API.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ApiClient, BadRequestError, concurrencyLimits, configure, NotFoundError, tasks } from "@svc/runtime";
import { clearServiceEnvironment, NO_RETRY, startListeningApi, type ListeningApi } from "./client-server.ts";

let api: ListeningApi;

beforeAll(async () => {
  api = await startListeningApi();
});
afterAll(async () => api?.close());
beforeEach(() => {
  clearServiceEnvironment();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
});

describe("concurrencyLimits", () => {
  it("overrides (creating the limit), retrieves, lists, overrides one key until its ttl, pauses, resumes and resets", async () => {
    const created = await concurrencyLimits.override("cl-openai", { total: 20, perKey: 2 });
    expect(created).toMatchObject({ name: "cl-openai", running: 0, queued: 0, paused: false, perKey: { current: 2, base: null, override: 2 }, total: { current: 20, override: 20 } });
    expect(created.total.overriddenAt).toBeInstanceOf(Date);
    expect(await concurrencyLimits.retrieve("cl-openai")).toEqual(created);
    await concurrencyLimits.override("cl-stripe", { total: 1 });
    const names: string[] = [];
    for await (const limit of concurrencyLimits.list({ perPage: 1 })) names.push(limit.name);
    expect(names).toEqual(["cl-openai", "cl-stripe"]);

    const acme = await concurrencyLimits.override("cl-openai", { concurrencyKey: "acme", perKey: 5, ttl: "1d" });
    expect(acme).toMatchObject({ name: "cl-openai", concurrencyKey: "acme", perKey: { current: 5, override: 5 }, running: 0, paused: false });
    const expiresAt = acme.perKey.expiresAt!;
    expect(expiresAt).toBeInstanceOf(Date);
    expect(Math.abs(expiresAt.getTime() - (Date.now() + 86_400_000))).toBeLessThan(60_000);
    expect((await concurrencyLimits.retrieve("cl-openai", { concurrencyKey: "acme" })).perKey.current).toBe(5);
    // Another key keeps the limit's own perKey.
    expect((await concurrencyLimits.retrieve("cl-openai", { concurrencyKey: "globex" })).perKey).toMatchObject({ current: 2, override: null, expiresAt: null });
    expect((await concurrencyLimits.reset("cl-openai", { concurrencyKey: "acme" })).perKey).toMatchObject({ current: 2, override: null });

    expect((await concurrencyLimits.pause("cl-openai")).paused).toBe(true);
    expect((await concurrencyLimits.resume("cl-openai")).paused).toBe(false);
    expect(await concurrencyLimits.reset("cl-openai")).toMatchObject({ perKey: { current: null, override: null }, total: { current: null, override: null } });

    // An explicit client, as the global one.
    const client = new ApiClient({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
    expect((await client.concurrencyLimits.retrieve("cl-stripe")).total.current).toBe(1);
  });

  it("throws NotFoundError for a limit nobody set and BadRequestError for a bad override", async () => {
    await expect(concurrencyLimits.retrieve("cl-nope")).rejects.toBeInstanceOf(NotFoundError);
    await expect(concurrencyLimits.reset("cl-nope")).rejects.toBeInstanceOf(NotFoundError);
    await expect(concurrencyLimits.override("cl-openai", { perKey: -1 })).rejects.toBeInstanceOf(BadRequestError);
    await expect(concurrencyLimits.override("cl-openai", {})).rejects.toBeInstanceOf(BadRequestError);
    await expect(concurrencyLimits.override("bad name with spaces", { total: 1 })).rejects.toBeInstanceOf(BadRequestError);
  });

  it("holds the limits a trigger names: one as a string, or a list", async () => {
    const one = await tasks.trigger("cl-some-task", {}, { concurrency: "cl-openai" });
    const two = await tasks.trigger("cl-some-task", {}, { concurrency: ["cl-openai", "cl-stripe"] });
    const held = async (id: string) => (await api.db.pool.query("SELECT concurrency_limits FROM runs WHERE id = $1", [id])).rows[0].concurrency_limits;
    expect(await held(one.id)).toEqual(["cl-openai"]);
    expect(await held(two.id)).toEqual(["cl-openai", "cl-stripe"]);
    await expect(tasks.trigger("cl-some-task", {}, { concurrency: ["a", "b", "c"] })).rejects.toBeInstanceOf(BadRequestError);
  });
});
