// Queues through svc's own client (`queues`, `ApiClient.queues`), against the real API.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { registerQueues } from "@svc/runtime/engine";
import { ApiClient, BadRequestError, configure, NotFoundError, queues } from "@svc/runtime";
import { clearServiceEnvironment, NO_RETRY, startListeningApi, type ListeningApi } from "./client-server.ts";

let api: ListeningApi;

beforeAll(async () => {
  api = await startListeningApi();
  const env = api.project.environments.dev.id;
  await api.db.pool.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, worker_version)
     VALUES ($1, 'cq-mailer', 'cq/emails', 4, 'test'), ($1, 'cq-solo', 'task/cq-solo', NULL, 'test')`,
    [env],
  );
  await registerQueues(api.db.pool, env, ["cq/emails", "task/cq-solo"], new Date());
});
afterAll(async () => api?.close());
beforeEach(() => {
  clearServiceEnvironment();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
});

describe("queues", () => {
  it("lists, retrieves, pauses, resumes, overrides and resets, by id, task id or name (a slash included)", async () => {
    const names: string[] = [];
    for await (const q of queues.list({ perPage: 1 })) names.push(q.name);
    expect(names).toEqual(["cq/emails", "cq-solo"]);

    const emails = await queues.retrieve({ type: "custom", name: "cq/emails" });
    expect(emails).toMatchObject({ name: "cq/emails", type: "custom", version: "V1", paused: false, concurrencyLimit: 4 });
    expect(await queues.retrieve(emails.id)).toEqual(emails);

    expect((await queues.pause({ type: "task", name: "cq-solo" })).paused).toBe(true);
    expect((await queues.resume({ type: "task", name: "cq-solo" })).paused).toBe(false);

    const overridden = await queues.overrideConcurrencyLimit(emails.id, 1);
    expect(overridden.concurrency).toMatchObject({ current: 1, base: 4, override: 1, overriddenBy: null });
    expect(overridden.concurrency.overriddenAt).toBeInstanceOf(Date);
    expect((await queues.resetConcurrencyLimit({ type: "custom", name: "cq/emails" })).concurrency).toMatchObject({ current: 4, override: null, overriddenAt: null });

    // An explicit client, as the global one.
    const client = new ApiClient({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
    expect((await client.queues.retrieve({ type: "task", name: "cq-solo" })).name).toBe("cq-solo");
  });

  it("throws NotFoundError for an unknown queue and BadRequestError for a bad limit", async () => {
    await expect(queues.retrieve({ type: "custom", name: "nope" })).rejects.toBeInstanceOf(NotFoundError);
    await expect(queues.pause("queue_nope")).rejects.toBeInstanceOf(NotFoundError);
    await expect(queues.overrideConcurrencyLimit({ type: "custom", name: "cq/emails" }, -1)).rejects.toBeInstanceOf(BadRequestError);
  });
});
