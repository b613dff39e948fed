// taskOverview: an environment's registered tasks with their newest runs (and the newest payload),
// another environment's registrations and runs left out; listRuns' id prefix filter.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, getEnvironment, listRuns, taskOverview, triggerRun, ValidationError, type Environment } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";

const clock = new FakeClock(new Date("2031-05-06T07:00:00.000Z"));
let te: TestEngine;
let dev: Environment;
let prod: Environment;

beforeAll(async () => {
  te = await startTestEngine({ clock });
  dev = (await getEnvironment(te.db.pool, te.env.id))!;
  prod = (await getEnvironment(te.db.pool, te.project.environments.prod.id))!;
});
afterAll(async () => te?.close());

async function register(env: Environment, task: string, kind = "STANDARD") {
  await te.db.pool.query(`INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, kind, worker_version) VALUES ($1, $2, $3, $4, 'v2')`, [env.id, task, `task/${task}`, kind]);
}

async function trigger(env: Environment, task: string, payload: unknown): Promise<string> {
  clock.advance(1000);
  return (await triggerRun(te.engine, env, task, payload)).id;
}

describe("taskOverview", () => {
  it("lists the environment's tasks with their newest runs first, and only the newest run's payload", async () => {
    await register(dev, "email");
    await register(dev, "idle", "SCHEDULED");
    await register(prod, "email");
    const runs = [];
    for (let i = 0; i < 4; i++) runs.push(await trigger(dev, "email", { n: i }));
    await trigger(prod, "email", { n: "prod" });
    await trigger(dev, "unregistered", {});
    const tasks = await taskOverview(te.db.pool, dev.id, { recentRuns: 3 });
    expect(tasks.map((t) => [t.taskIdentifier, t.kind, t.queue, t.workerVersion])).toEqual([
      ["email", "STANDARD", "task/email", "v2"],
      ["idle", "SCHEDULED", "task/idle", "v2"],
    ]);
    const email = tasks[0]!;
    expect(email.recentRuns.map((r) => r.id)).toEqual([runs[3], runs[2], runs[1]]);
    expect(email.recentRuns[0]!.createdAt).toEqual(new Date(clock.now().getTime() - 2000));
    expect(email.lastPayload).toEqual({ data: '{"n":3}', type: "application/json" });
    expect(tasks[1]!.recentRuns).toEqual([]);
    expect(tasks[1]!.lastPayload).toBeNull();
    const one = await taskOverview(te.db.pool, dev.id, { recentRuns: 10, taskIdentifiers: ["email"] });
    expect(one.map((t) => t.recentRuns.length)).toEqual([4]);
    expect(await taskOverview(te.db.pool, dev.id, { recentRuns: 10, taskIdentifiers: ["unregistered"] })).toEqual([]);
  });
});

describe("listRuns with an id prefix", () => {
  const page = { keyset: null, direction: "desc" as const, limit: 25 };

  it("finds the runs whose id starts with the prefix, in this environment only, from any time", async () => {
    const a = await trigger(dev, "prefixed", {});
    const b = await trigger(dev, "prefixed", {});
    let shared = 4;
    while (a[shared] === b[shared]) shared++;
    const both = await listRuns(te.db.pool, [dev.id], { idPrefix: a.slice(0, shared) }, page);
    expect(both.map((r) => r.id)).toEqual(expect.arrayContaining([a, b]));
    expect(both.every((r) => r.id.startsWith(a.slice(0, shared)))).toBe(true);
    expect((await listRuns(te.db.pool, [dev.id], { idPrefix: a }, page)).map((r) => r.id)).toEqual([a]);
    expect(await listRuns(te.db.pool, [prod.id], { idPrefix: a }, page)).toEqual([]);
    expect((await listRuns(te.db.pool, [dev.id], { idPrefix: a, taskIdentifiers: ["other"] }, page)).length).toBe(0);
  });

  it("refuses a prefix that cannot start a run id", async () => {
    for (const idPrefix of ["run-1", "RUN_1", "run_%", "run_" + "a".repeat(22), "x"]) {
      await expect(listRuns(te.db.pool, [dev.id], { idPrefix }, page), idPrefix).rejects.toThrow(ValidationError);
    }
  });
});
