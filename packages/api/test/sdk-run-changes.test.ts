import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, BadRequestError, configure, idempotencyKeys, NotFoundError, PermissionDeniedError, runs, tasks, UnprocessableEntityError } from "@trigger.dev/sdk";
import { ApiClient } from "@trigger.dev/core/v3";
import { CHANNELS, delayedRuns, fireAllDue } from "@svc/runtime/engine";
import { registerTasks } from "./registered-tasks.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";

// The published SDK, unchanged, changing runs after their trigger: reschedule, tags (through its
// API client: `tags.add` only works inside a Trigger.dev task), replay overrides, idempotency key
// reset. No worker runs: runs stay QUEUED or DELAYED, and time moves only when the test says.
let api: TestApi;
let baseURL: string;
let client: ApiClient;
const clock = new FakeClock(Date.now());
const HOUR = 3_600_000;

beforeAll(async () => {
  api = await startTestApi({ clock });
  baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  api.engine.apiUrl = baseURL;
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  // Registered, as a worker would: their queued runs read QUEUED (a never-registered task's read PENDING_VERSION).
  await registerTasks(api.db.pool, api.project.environments.dev.id, ["idempotent-task", "later-task", "tagged-task", "replay-task", "other-task"]);
  client = new ApiClient(baseURL, api.project.environments.dev.secretKey, undefined, { retry: { maxAttempts: 1 } });
});
afterAll(async () => api?.close());

async function row(id: string) {
  const { rows } = await api.db.pool.query(
    `SELECT status, delay_until, expire_at, tags, idempotency_key, idempotency_key_user, idempotency_key_scope FROM runs WHERE id = $1`,
    [id],
  );
  return rows[0];
}

const post = (url: string, payload: unknown, headers: Record<string, string> = api.devAuth) =>
  api.app.inject({ method: "POST", url, headers: { ...headers, "content-type": "application/json" }, payload: JSON.stringify(payload) });

describe("runs.reschedule", () => {
  it("moves a DELAYED run's due time and its TTL with it; the run fires then, not at its old time", async () => {
    const now = clock.now();
    const { id } = await tasks.trigger("later-task", { n: 1 }, { delay: "1h", ttl: "10m" });
    expect((await row(id)).expire_at).toEqual(new Date(now.getTime() + HOUR + 600_000));

    const run = await runs.reschedule(id, { delay: "2h" });
    expect(run).toMatchObject({ id, status: "DELAYED", taskIdentifier: "later-task", payload: { n: 1 } });
    expect(run.delayedUntil).toEqual(new Date(now.getTime() + 2 * HOUR));
    expect(await row(id)).toMatchObject({ status: "DELAYED", delay_until: new Date(now.getTime() + 2 * HOUR), expire_at: new Date(now.getTime() + 2 * HOUR + 600_000) });

    await fireAllDue(api.engine, new Date(now.getTime() + HOUR + 60_000), [delayedRuns]);
    expect((await row(id)).status).toBe("DELAYED");
    await fireAllDue(api.engine, new Date(now.getTime() + 2 * HOUR), [delayedRuns]);
    expect((await row(id)).status).toBe("QUEUED");
  });

  it("takes a date, and an earlier time than before; timer loops hear of the new time", async () => {
    const listener = new pg.Client({ connectionString: api.db.url });
    await listener.connect();
    try {
      await listener.query(`LISTEN ${CHANNELS.timers}`);
      const { id } = await tasks.trigger("later-task", { n: 2 }, { delay: "1d" });
      const soon = new Date(clock.now().getTime() + 5 * 60_000);
      const heard = new Promise<string>((resolve) => listener.on("notification", (n) => n.payload === soon.toISOString() && resolve(n.payload)));
      const run = await runs.reschedule(id, { delay: soon });
      expect(run.delayedUntil).toEqual(soon);
      expect(await heard).toBe(soon.toISOString());
    } finally {
      await listener.end();
    }
  });

  it("refuses a run that is not DELAYED (400), an unknown run (404), and a delay that is not in the future or not a delay (400)", async () => {
    const queued = await tasks.trigger("later-task", { n: 3 });
    await expect(runs.reschedule(queued.id, { delay: "1h" })).rejects.toThrow(BadRequestError);
    const answer = await post(`/api/v1/runs/${queued.id}/reschedule`, { delay: "1h" });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error).toBe(`Cannot reschedule a run that is not delayed: ${queued.id} is QUEUED`);
    expect((await row(queued.id)).delay_until).toBeNull();

    await expect(runs.reschedule("run_doesnotexist", { delay: "1h" })).rejects.toThrow(NotFoundError);

    const { id } = await tasks.trigger("later-task", { n: 4 }, { delay: "1h" });
    const before = (await row(id)).delay_until;
    await expect(runs.reschedule(id, { delay: new Date(clock.now().getTime() - 1000) })).rejects.toThrow(BadRequestError);
    for (const [body, error] of [
      [{ delay: "tomorrow" }, /delay: "tomorrow" is neither a duration/],
      [{ delay: "2020-01-01T00:00:00Z" }, /Invalid delay: 2020-01-01T00:00:00Z is not in the future/],
      [{ delay: "0s" }, /is not in the future/],
      [{ delay: true }, /Invalid request body: delay/],
      [{}, /Invalid request body: delay/],
    ] as const) {
      const res = await post(`/api/v1/runs/${id}/reschedule`, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toMatch(error);
    }
    const form = await api.app.inject({ method: "POST", url: `/api/v1/runs/${id}/reschedule`, headers: { ...api.devAuth, "content-type": "text/plain" }, payload: "delay=1h" });
    expect(form.statusCode).toBe(415);
    expect((await row(id)).delay_until).toEqual(before);
  });
});

describe("adding tags (the SDK's addTags)", () => {
  it("adds tags to a run of any status, skipping blank ones and those it has; the run list finds it by them", async () => {
    const { id } = await tasks.trigger("tagged-task", { n: 1 }, { tags: ["a"] });
    expect(await client.addTags(id, { tags: ["b", " ", "a", "c", "b"] })).toEqual({ message: "Successfully set 2 new tags." });
    expect(await client.addTags(id, { tags: "c" })).toEqual({ message: "No new tags to add" });
    expect((await row(id)).tags).toEqual(["a", "b", "c"]);
    expect((await runs.retrieve(id)).tags).toEqual(["a", "b", "c"]);
    const listed = [];
    for await (const run of runs.list({ tag: "c", period: "1h" })) listed.push(run.id);
    expect(listed).toEqual([id]);

    await runs.cancel(id);
    await client.addTags(id, { tags: ["after-cancel"] });
    expect((await row(id)).tags).toContain("after-cancel");
  });

  it("keeps a run to 10 tags of at most 128 characters (422 and 400, as Trigger.dev), and refuses bad bodies and unknown runs", async () => {
    const { id } = await tasks.trigger("tagged-task", { n: 2 }, { tags: ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"] });
    await expect(client.addTags(id, { tags: ["t8", "t9", "t10"] })).rejects.toThrow(UnprocessableEntityError);
    const over = await post(`/api/v1/runs/${id}/tags`, { tags: ["t8", "t9", "t10"] });
    expect(over.statusCode).toBe(422);
    expect(over.json().error).toBe("Runs can only have 10 tags, you're trying to set 11. These tags have not been set: 't8', 't9', 't10'.");
    expect((await row(id)).tags).toHaveLength(8);
    expect((await post(`/api/v1/runs/${id}/tags`, { tags: ["t8", "t9"] })).json()).toEqual({ message: "Successfully set 2 new tags." });

    const { id: other } = await tasks.trigger("tagged-task", { n: 3 });
    for (const body of [{ tags: "x".repeat(129) }, { tags: 5 }, { tags: [null] }, {}, { tags: "nul\u0000" }]) {
      const res = await post(`/api/v1/runs/${other}/tags`, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(typeof res.json().error).toBe("string");
    }
    await expect(client.addTags("run_doesnotexist", { tags: ["x"] })).rejects.toThrow(NotFoundError);
    expect((await row(other)).tags).toEqual([]);
  });
});

describe("runs.replay with overrides (SDK 4.7+)", () => {
  it("replays with a new payload, delay, tags, metadata and queue", async () => {
    const { id } = await tasks.trigger("replay-task", { v: 1 }, { tags: ["old"], metadata: { m: 1 } });
    const when = new Date("2025-06-01T00:00:00.000Z");
    const replayed = await runs.replay(id, { payload: { v: 2, when }, delay: "1h", tags: ["new", "newer"], metadata: { m: 2 }, queue: "replay-queue" });
    expect(replayed.id).not.toBe(id);
    const run = await runs.retrieve(replayed.id);
    // Retrieve shows a SuperJSON payload as JSON (the Date as its ISO text); the run keeps the SuperJSON.
    expect(run).toMatchObject({ status: "DELAYED", taskIdentifier: "replay-task", tags: ["new", "newer"], metadata: { m: 2 }, payload: { v: 2, when: when.toISOString() } });
    expect(run.delayedUntil).toEqual(new Date(clock.now().getTime() + HOUR));
    const { rows } = await api.db.pool.query(`SELECT queue_name, payload_type FROM runs WHERE id = $1`, [replayed.id]);
    expect(rows[0]).toEqual({ queue_name: "replay-queue", payload_type: "application/super+json" });
    // Without overrides: a copy of the original.
    const copy = await runs.retrieve((await runs.replay(id)).id);
    expect(copy).toMatchObject({ status: "QUEUED", tags: ["old"], metadata: { m: 1 }, payload: { v: 1 } });
  });
});

describe("idempotency keys: the scope stored and shown, idempotencyKeys.reset", () => {
  it("stores the key its user gave and its scope; reset frees the key for the next trigger, and the old run keeps showing it", async () => {
    const key = await idempotencyKeys.create("order-1", { scope: "global" });
    const first = await tasks.trigger("idempotent-task", { n: 1 }, { idempotencyKey: key });
    expect(await row(first.id)).toMatchObject({ idempotency_key: key, idempotency_key_user: "order-1", idempotency_key_scope: "global" });
    expect((await runs.retrieve(first.id)).idempotencyKey).toBe("order-1");
    expect((await tasks.trigger("idempotent-task", { n: 2 }, { idempotencyKey: key })).id).toBe(first.id);

    expect(await idempotencyKeys.reset("idempotent-task", "order-1", { scope: "global" })).toEqual({ id: key });
    const second = await tasks.trigger("idempotent-task", { n: 3 }, { idempotencyKey: key });
    expect(second.id).not.toBe(first.id);
    expect(await row(first.id)).toMatchObject({ idempotency_key: null, idempotency_key_user: "order-1" });
    expect((await runs.retrieve(first.id)).idempotencyKey).toBe("order-1");

    // The same key of another task is that task's own.
    const otherTask = await tasks.trigger("other-task", { n: 4 }, { idempotencyKey: key });
    await idempotencyKeys.reset("idempotent-task", key);
    expect((await row(otherTask.id)).idempotency_key).toBe(key);
    await expect(idempotencyKeys.reset("idempotent-task", key)).rejects.toThrow(NotFoundError);
  });

  it("takes a public token with write:runs or write:tasks:<task>, and refuses others and bad input", async () => {
    const key = await idempotencyKeys.create("order-2", { scope: "global" });
    const reset = (headers: Record<string, string>, body: unknown = { taskIdentifier: "idempotent-task" }, k: string = key) =>
      post(`/api/v1/idempotencyKeys/${encodeURIComponent(k)}/reset`, body, headers);
    const grants: NonNullable<Parameters<typeof auth.createPublicToken>[0]>["scopes"][] = [{ write: { runs: true } }, { write: { tasks: ["idempotent-task"] } }];
    for (const scopes of grants) {
      await tasks.trigger("idempotent-task", { n: 1 }, { idempotencyKey: key });
      const token = await auth.createPublicToken({ scopes });
      expect((await reset({ authorization: `Bearer ${token}` })).json()).toEqual({ id: key });
    }
    await tasks.trigger("idempotent-task", { n: 1 }, { idempotencyKey: key });
    const reader = await auth.createPublicToken({ scopes: { read: { runs: true }, write: { tasks: ["other-task"] } } });
    expect((await reset({ authorization: `Bearer ${reader}` })).statusCode).toBe(403);
    await expect(auth.withAuth({ accessToken: reader }, () => idempotencyKeys.reset("idempotent-task", key))).rejects.toThrow(PermissionDeniedError);

    for (const [body, k] of [[{}, key], [{ taskIdentifier: "" }, key], [{ taskIdentifier: 7 }, key], [{ taskIdentifier: "idempotent-task" }, "nul\u0000key"]] as const) {
      const res = await reset(api.devAuth, body, k);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(typeof res.json().error).toBe("string");
    }
    expect((await row((await tasks.trigger("idempotent-task", { n: 9 }, { idempotencyKey: key })).id)).idempotency_key).toBe(key);
  });
});
