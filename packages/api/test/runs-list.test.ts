import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { createToken, getEnvironment, newId } from "@svc/runtime/engine";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { registerTasks } from "./registered-tasks.ts";
import { insertRun, nullPaths, sdkSchemas, triggerTask, type RunFixture } from "./runs-fixtures.ts";
import { waitingRunOn } from "./waitpoints-helpers.ts";

const NOW = new Date("2026-03-10T12:00:00.000Z");
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

let api: TestApi;
let clock: FakeClock;
let devEnv: string;
let ListRunResponseItem: ZodType;
beforeAll(async () => {
  clock = new FakeClock(NOW);
  api = await startTestApi({ clock });
  devEnv = api.project.environments.dev.id;
  // Registered, as a worker would: their queued runs read QUEUED (a never-registered task's read PENDING_VERSION).
  await registerTasks(api.db.pool, devEnv, ["shape-task", "f-status"]);
  ListRunResponseItem = (await sdkSchemas()).ListRunResponseItem;
});
afterAll(async () => api?.close());

type Item = { id: string; createdAt: string; [key: string]: unknown };
type ListBody = { data: Item[]; pagination: { next?: string; previous?: string } };

async function list(query: Record<string, string>, headers: Record<string, string> = api.devAuth) {
  const qs = new URLSearchParams(query).toString();
  return api.app.inject({ method: "GET", url: `/api/v1/runs${qs ? `?${qs}` : ""}`, headers });
}

async function listOk(query: Record<string, string>): Promise<ListBody> {
  const res = await list(query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function ids(query: Record<string, string>): Promise<string[]> {
  return (await listOk(query)).data.map((r) => r.id);
}

/** Inserts runs for one task so each test filters on its own task. */
async function seed(task: string, runs: Omit<RunFixture, "environmentId" | "taskIdentifier">[]): Promise<string[]> {
  const out: string[] = [];
  for (const run of runs) out.push(await insertRun(api, { environmentId: devEnv, taskIdentifier: task, ...run }));
  return out;
}

const ago = (ms: number) => new Date(NOW.getTime() - ms);

describe("GET /api/v1/runs pagination", () => {
  it("pages forwards and backwards newest first, breaking created_at ties by id, without gaps or repeats", async () => {
    const created = [ago(1 * MINUTE), ago(2 * MINUTE), ago(2 * MINUTE), ago(3 * MINUTE), ago(4 * MINUTE), ago(4 * MINUTE), ago(5 * MINUTE)];
    const runIds = await seed("pager", created.map((createdAt) => ({ createdAt })));
    const expected = runIds
      .map((id, i) => ({ id, t: created[i]!.getTime() }))
      .sort((a, b) => b.t - a.t || (a.id < b.id ? 1 : -1))
      .map((r) => r.id);

    const base = { "filter[taskIdentifier]": "pager", "page[size]": "3" };
    const p1 = await listOk(base);
    expect(p1.data.map((r) => r.id)).toEqual(expected.slice(0, 3));
    expect(p1.pagination.previous).toBeUndefined();
    const p2 = await listOk({ ...base, "page[after]": p1.pagination.next! });
    expect(p2.data.map((r) => r.id)).toEqual(expected.slice(3, 6));
    const p3 = await listOk({ ...base, "page[after]": p2.pagination.next! });
    expect(p3.data.map((r) => r.id)).toEqual(expected.slice(6));
    expect(p3.pagination.next).toBeUndefined();
    expect(p3.pagination.previous).toBeTypeOf("string");

    const back2 = await listOk({ ...base, "page[before]": p3.pagination.previous! });
    expect(back2.data.map((r) => r.id)).toEqual(expected.slice(3, 6));
    expect(back2.pagination.next).toBeTypeOf("string");
    const back1 = await listOk({ ...base, "page[before]": back2.pagination.previous! });
    expect(back1.data.map((r) => r.id)).toEqual(expected.slice(0, 3));
    expect(back1.pagination.previous).toBeUndefined();
    expect(back1.pagination.next).toBeTypeOf("string");
  });

  it("defaults to 25 per page and allows at most 100", async () => {
    await seed("many", Array.from({ length: 27 }, (_, i) => ({ createdAt: ago(i * 1000) })));
    const first = await listOk({ "filter[taskIdentifier]": "many" });
    expect(first.data).toHaveLength(25);
    expect(first.pagination.next).toBeTypeOf("string");
    expect((await listOk({ "filter[taskIdentifier]": "many", "page[size]": "100" })).data).toHaveLength(27);
    for (const size of ["0", "101", "abc"]) {
      const res = await list({ "page[size]": size });
      expect(res.statusCode, size).toBe(400);
      expect(res.json().error).toMatch(/page\[size\]/);
    }
  });

  it("rejects foreign cursors and after+before together with 400", async () => {
    expect((await list({ "page[after]": "not-a-cursor" })).statusCode).toBe(400);
    const forged = Buffer.from(JSON.stringify({ c: 1e20, r: "x" })).toString("base64url");
    expect((await list({ "page[after]": forged })).statusCode).toBe(400);
    const nul = Buffer.from(JSON.stringify({ c: 1, r: "a\u0000" })).toString("base64url");
    expect((await list({ "page[before]": nul })).statusCode).toBe(400);
    const both = await list({ "page[after]": forged, "page[before]": forged });
    expect(both.statusCode).toBe(400);
  });

  it("returns items the SDK's ListRunResponseItem schema accepts, with env and no nulls", async () => {
    const id = await triggerTask(api, { payload: { a: 1 }, options: { tags: ["shape"], metadata: { k: "v" } } }, "shape-task");
    const body = await listOk({ "filter[taskIdentifier]": "shape-task" });
    expect(body.data.map((r) => r.id)).toEqual([id]);
    expect(nullPaths(body)).toEqual([]);
    const item = body.data[0]!;
    expect(ListRunResponseItem.safeParse(item).success).toBe(true);
    expect(item).toMatchObject({ status: "QUEUED", tags: ["shape"], env: { id: devEnv, name: "dev" }, metadata: { k: "v" } });
    expect(item).not.toHaveProperty("payload");
    expect(item.waitingFor).toEqual([]);
  });

  it("says what each WAITING run of the page waits on, in items the SDK's schema accepts", async () => {
    const tokens = await Promise.all([0, 1].map(async () => (await createToken(api.engine, devEnv, {})).waitpoint.id));
    const waiting = await Promise.all(tokens.map((token) => waitingRunOn(api.db.pool, devEnv, token)));
    const body = await listOk({ "filter[status]": "WAITING", "filter[taskIdentifier]": "approval-task" });
    const waitsById = Object.fromEntries(body.data.map((item) => [item.id, item.waitingFor]));
    expect(waitsById).toMatchObject({ [waiting[0]!]: [{ type: "MANUAL", id: tokens[0] }], [waiting[1]!]: [{ type: "MANUAL", id: tokens[1] }] });
    expect(Object.keys(waitsById)).toHaveLength(2);
    for (const item of body.data) expect(ListRunResponseItem.safeParse(item).success).toBe(true);
  });
});

describe("GET /api/v1/runs filters", () => {
  it("filters by status (either vocabulary) and names invalid statuses in a 400", async () => {
    const [queued, completed, failed] = await seed("f-status", [
      { createdAt: ago(3 * MINUTE), status: "QUEUED" },
      { createdAt: ago(2 * MINUTE), status: "COMPLETED" },
      { createdAt: ago(1 * MINUTE), status: "FAILED" },
    ]);
    expect(await ids({ "filter[taskIdentifier]": "f-status", "filter[status]": "COMPLETED,FAILED" })).toEqual([failed, completed]);
    expect(await ids({ "filter[taskIdentifier]": "f-status", "filter[status]": "QUEUED" })).toEqual([queued]);
    expect(await ids({ "filter[taskIdentifier]": "f-status", "filter[status]": "INTERRUPTED" })).toEqual([failed]);
    // A queued run of a task no worker of the environment registered is PENDING_VERSION (legacy: WAITING_FOR_DEPLOY).
    const [pending] = await seed("f-status-undeployed", [{ createdAt: ago(3 * MINUTE), status: "QUEUED" }]);
    expect(await ids({ "filter[taskIdentifier]": "f-status,f-status-undeployed", "filter[status]": "QUEUED" })).toEqual([queued]);
    expect(await ids({ "filter[taskIdentifier]": "f-status,f-status-undeployed", "filter[status]": "PENDING_VERSION" })).toEqual([pending]);
    expect(await ids({ "filter[status]": "WAITING_FOR_DEPLOY", "filter[tag]": "nope,other" })).toEqual([]);
    expect(await ids({ "filter[status]": "WAITING_FOR_DEPLOY", "filter[taskIdentifier]": "f-status,f-status-undeployed" })).toEqual([pending]);
    expect((await listOk({ "filter[taskIdentifier]": "f-status-undeployed" })).data.map((r) => r.status)).toEqual(["PENDING_VERSION"]);
    const bad = await list({ "filter[status]": "QUEUED,PENDING,NOPE" });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/Invalid status values: PENDING, NOPE/);
  });

  it("filters by several task identifiers", async () => {
    const [a] = await seed("f-task-a", [{ createdAt: ago(2 * MINUTE) }]);
    const [b] = await seed("f-task-b", [{ createdAt: ago(1 * MINUTE) }]);
    expect(await ids({ "filter[taskIdentifier]": "f-task-a,f-task-b" })).toEqual([b, a]);
  });

  it("matches any of the given tags, across pages", async () => {
    const [t1, t2, , t4] = await seed("f-tag", [
      { createdAt: ago(4 * MINUTE), tags: ["red"] },
      { createdAt: ago(3 * MINUTE), tags: ["blue", "x"] },
      { createdAt: ago(2 * MINUTE), tags: ["green"] },
      { createdAt: ago(1 * MINUTE), tags: ["red", "blue"] },
    ]);
    const query = { "filter[taskIdentifier]": "f-tag", "filter[tag]": "red,blue", "page[size]": "2" };
    const p1 = await listOk(query);
    expect(p1.data.map((r) => r.id)).toEqual([t4, t2]);
    const p2 = await listOk({ ...query, "page[after]": p1.pagination.next! });
    expect(p2.data.map((r) => r.id)).toEqual([t1]);
    expect(p2.pagination.next).toBeUndefined();
    const back = await listOk({ ...query, "page[before]": p2.pagination.previous! });
    expect(back.data.map((r) => r.id)).toEqual([t4, t2]);
  });

  it("filters by version, isTest, batch, schedule and queue", async () => {
    const batchId = newId.batch();
    await api.db.pool.query(`INSERT INTO batches (id, environment_id, run_count) VALUES ($1, $2, 1)`, [batchId, devEnv]);
    const [v1, v2, test, inBatch, scheduled, queued] = await seed("f-misc", [
      { createdAt: ago(6 * MINUTE), workerVersion: "20250101.1" },
      { createdAt: ago(5 * MINUTE), workerVersion: "20250101.2" },
      { createdAt: ago(4 * MINUTE), isTest: true },
      { createdAt: ago(3 * MINUTE), batchId, batchIndex: 0 },
      { createdAt: ago(2 * MINUTE), scheduleId: "sched_abc" },
      { createdAt: ago(1 * MINUTE), queueName: "custom-q" },
    ]);
    const q = (extra: Record<string, string>) => ids({ "filter[taskIdentifier]": "f-misc", ...extra });
    expect(await q({ "filter[version]": "20250101.1" })).toEqual([v1]);
    expect(await q({ "filter[version]": "20250101.1,20250101.2" })).toEqual([v2, v1]);
    expect(await q({ "filter[isTest]": "true" })).toEqual([test]);
    expect(await q({ "filter[isTest]": "false" })).not.toContain(test);
    expect(await q({ "filter[batch]": batchId })).toEqual([inBatch]);
    expect(await q({ "filter[schedule]": "sched_abc" })).toEqual([scheduled]);
    expect(await q({ "filter[queue]": "custom-q" })).toEqual([queued]);
    const badTest = await list({ "filter[isTest]": "maybe" });
    expect(badTest.statusCode).toBe(400);
    expect(badTest.json().error).toMatch(/filter\[isTest\]/);
  });

  it("covers only the last 7 days by default; period, from and to widen or narrow it", async () => {
    const [old, week, recent, fresh] = await seed("f-time", [
      { createdAt: ago(8 * DAY) },
      { createdAt: ago(6 * DAY) },
      { createdAt: ago(2 * HOUR) },
      { createdAt: ago(30 * MINUTE) },
    ]);
    const q = (extra: Record<string, string>) => ids({ "filter[taskIdentifier]": "f-time", ...extra });
    expect(await q({})).toEqual([fresh, recent, week]);
    expect(await q({ "filter[createdAt][period]": "30d" })).toEqual([fresh, recent, week, old]);
    expect(await q({ "filter[createdAt][period]": "1h" })).toEqual([fresh]);
    expect(await q({ "filter[createdAt][from]": String(ago(9 * DAY).getTime()), "filter[createdAt][to]": String(ago(5 * DAY).getTime()) })).toEqual([week, old]);
    expect(await q({ "filter[createdAt][from]": ago(3 * HOUR).toISOString() })).toEqual([fresh, recent]);
    expect(await q({ "filter[createdAt][to]": ago(7 * DAY).toISOString() })).toEqual([old]);

    // The window moves with the clock.
    clock.set(NOW.getTime() + 2 * DAY);
    try {
      expect(await q({})).toEqual([fresh, recent]);
    } finally {
      clock.set(NOW);
    }
  });

  it("answers unparseable periods and dates with a 400 naming the parameter", async () => {
    for (const [param, value] of [
      ["filter[createdAt][period]", "1x"],
      ["filter[createdAt][from]", "yesterday-ish"],
      ["filter[createdAt][to]", "99999999999999999999"],
    ] as const) {
      const res = await list({ [param]: value });
      expect(res.statusCode, param).toBe(400);
      expect(res.json().error).toContain(param);
    }
    expect((await list({ "filter[tag]": "a\u0000b" })).statusCode).toBe(400);
  });

  it("lists only the key's own environment", async () => {
    const prodKey = { authorization: `Bearer ${api.project.environments.prod.secretKey}` };
    const devRun = await triggerTask(api, { payload: 1 }, "f-env");
    const prodRun = await triggerTask(api, { payload: 1 }, "f-env", prodKey);
    expect(await ids({ "filter[taskIdentifier]": "f-env" })).toEqual([devRun]);
    const prodList = await list({ "filter[taskIdentifier]": "f-env" }, prodKey);
    expect(prodList.json().data.map((r: Item) => r.id)).toEqual([prodRun]);
    expect(prodList.json().data[0].env).toEqual({ id: api.project.environments.prod.id, name: "prod" });
  });

  it("accepts a public token with read:runs, or read:tasks:<id> when filtering on that task", async () => {
    const env = (await getEnvironment(api.db.pool, devEnv))!;
    const bearer = async (scopes: string[]) => ({ authorization: `Bearer ${await mintPublicToken(api.deps, env, scopes)}` });
    expect((await list({}, await bearer(["read:runs"]))).statusCode).toBe(200);
    expect((await list({ "filter[taskIdentifier]": "f-task-a" }, await bearer(["read:tasks:f-task-a"]))).statusCode).toBe(200);
    expect((await list({ "filter[taskIdentifier]": "f-task-a,other" }, await bearer(["read:tasks:f-task-a"]))).statusCode).toBe(403);
    expect((await list({}, await bearer(["read:tasks:f-task-a"]))).statusCode).toBe(403);
    expect((await list({}, { authorization: "Bearer svc_dev_unknown" })).statusCode).toBe(401);
  });
});
