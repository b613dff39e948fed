// Declared concurrency limits as the worker loads and registers them: a limit a task names by its
// name gets the bounds of the concurrencyLimit() exported under that name; one limit declared with
// two sets of bounds in one worker's code fails the load, naming the task; tasks registered by two
// workers that declare one limit differently give it the strictest of each bound, and the bounds
// follow the registrations (a relaxed declaration relaxes it, a dropped one leaves no base, the
// operator's override and pause untouched).
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { overrideConcurrencyLimit, retrieveConcurrencyLimit } from "@svc/runtime/engine";
import { concurrencyLimit, task } from "@svc/runtime/sdk";
import { loadTasks } from "../src/tasks/load-tasks.ts";
import { declaredLimitsOf, registerTasks } from "../src/tasks/register-tasks.ts";
import { startTestEngine, type TestEngine } from "./harness.ts";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}/svc.config.ts`, import.meta.url));
let te: TestEngine;

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => {
  await te?.close();
});

const limit = (name: string) => retrieveConcurrencyLimit(te.engine.db, te.env.id, name);

describe("loading and registering declared concurrency limits", () => {
  it("resolves limits named by their name against the exported concurrencyLimit() of that name", async () => {
    const { tasks } = await loadTasks(fixture("declared-limits"));
    const byId = new Map(tasks.map((t) => [t.id, t]));
    expect(declaredLimitsOf(byId.get("resize")!)).toEqual({
      held: ["image-api", "task/resize"],
      declared: [{ name: "image-api", per_key: 1, total: 4 }, { name: "task/resize", per_key: 1, total: 10 }],
    });
    expect(declaredLimitsOf(byId.get("thumbnail")!)).toEqual({ held: ["image-api"], declared: [{ name: "image-api", per_key: 1, total: 4 }] });
    expect(declaredLimitsOf(byId.get("caption")!)).toEqual({
      held: ["openai", "image-api"],
      declared: [{ name: "openai", per_key: null, total: 25 }, { name: "image-api", per_key: 1, total: 4 }],
    });
    // Named, declared nowhere: held, with no bounds (an operator may set them).
    expect(declaredLimitsOf(byId.get("undeclared-name")!)).toEqual({ held: ["nobody-declares"], declared: [] });

    await registerTasks(te.db.pool, te.env.id, tasks, "v1", new Date());
    expect(await limit("image-api")).toMatchObject({ perKey: 1, total: 4, perKeyOverride: null, totalOverride: null });
    expect(await limit("openai")).toMatchObject({ perKey: null, total: 25 });
    expect(await limit("task/resize")).toMatchObject({ perKey: 1, total: 10 });
    await expect(limit("nobody-declares")).rejects.toThrow('No concurrency limit named "nobody-declares"');
  });

  it("fails the load when one worker's code declares a limit with two sets of bounds, naming the task", async () => {
    await expect(loadTasks(fixture("declared-limits-conflict"))).rejects.toThrow(
      /task\("translate"\) in .*b\.ts: concurrency limit "openai" is declared with other bounds \(perKey none, total 10\) than in .*a\.ts \(perKey none, total 25\)/,
    );
  });

  it("keeps the strictest of each bound two workers' tasks declare, and follows their registrations", async () => {
    const declaring = (id: string, bounds: { total?: number; perKey?: number } | null) =>
      task({ id, ...(bounds ? { concurrency: concurrencyLimit({ name: "shared-api", ...bounds }) } : {}), run: async () => "ok" });
    const at = new Date();
    // Worker one (v1) declares total 5; worker two (v2, another task) total 2 and perKey 3.
    await registerTasks(te.db.pool, te.env.id, [declaring("shared-one", { total: 5 })], "v1", at);
    expect(await limit("shared-api")).toMatchObject({ total: 5, perKey: null });
    await registerTasks(te.db.pool, te.env.id, [declaring("shared-two", { total: 2, perKey: 3 })], "v2", at);
    expect(await limit("shared-api")).toMatchObject({ total: 2, perKey: 3 });

    // An operator's override sits on top of the declared bounds and survives them changing.
    await overrideConcurrencyLimit(te.engine, te.env.id, "shared-api", { total: 7 }, at);
    // Worker two's next version relaxes its declaration: the strictest left is worker one's.
    await registerTasks(te.db.pool, te.env.id, [declaring("shared-two", { total: 8 })], "v3", at);
    expect(await limit("shared-api")).toMatchObject({ total: 5, perKey: null, totalOverride: 7 });
    // Neither declares it any more: no declared bound, the override stays.
    await registerTasks(te.db.pool, te.env.id, [declaring("shared-one", null), declaring("shared-two", null)], "v4", at);
    expect(await limit("shared-api")).toMatchObject({ total: null, perKey: null, totalOverride: 7 });
  });
});
