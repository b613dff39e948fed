// Env vars, waitpoint tokens and schedules through the client, against the real API.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { addProjectMember, createBranch, createPersonalAccessToken, createUser, getProjectByRef } from "@svc/runtime/engine";
import {
  ApiClient,
  BadRequestError,
  configure,
  envvars,
  NotFoundError,
  schedulesClient,
  UnprocessableEntityError,
  waitClient,
} from "@svc/runtime";
import { clearServiceEnvironment, NO_RETRY, startListeningApi, type ListeningApi } from "./client-server.ts";

let api: ListeningApi;
let ref: string;

beforeAll(async () => {
  api = await startListeningApi();
  ref = api.project.projectRef;
});
afterAll(async () => api?.close());
beforeEach(() => {
  clearServiceEnvironment();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
});

describe("envvars", () => {
  it("runs all six operations with a secret key", async () => {
    expect(await envvars.upload(ref, "dev", { variables: { A: "1", B: "2" } })).toEqual({ success: true });
    expect(await envvars.create(ref, "dev", { name: "S", value: "s3cret", isSecret: true })).toEqual({ success: true });
    expect(await envvars.update(ref, "dev", "A", { value: "10" })).toEqual({ success: true });
    expect(await envvars.retrieve(ref, "dev", "A")).toMatchObject({ name: "A", value: "10", isSecret: false });
    const list = await envvars.list(ref, "dev");
    expect(list.find((v) => v.name === "S")).toMatchObject({ isSecret: true });
    expect(list.find((v) => v.name === "S")!.value).not.toBe("s3cret");
    expect(await envvars.del(ref, "dev", "B")).toEqual({ success: true });
    await expect(envvars.retrieve(ref, "dev", "B")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("refuses an upload over existing names without override (400), accepts it with override", async () => {
    await envvars.upload(ref, "dev", { variables: { DUP: "1" } });
    const error = await envvars.upload(ref, "dev", { variables: { DUP: "2" } }).catch((e) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.message).toMatch(/override/);
    await envvars.upload(ref, "dev", { variables: { DUP: "2" }, override: true });
    expect((await envvars.retrieve(ref, "dev", "DUP")).value).toBe("2");
  });

  it("with a personal access token, addresses each preview branch through previewBranch", async () => {
    await createBranch(api.db.pool, ref, "feat-a");
    await createBranch(api.db.pool, ref, "feat-b");
    const user = await createUser(api.db.pool, { email: "client-tests@example.com" });
    await addProjectMember(api.db.pool, (await getProjectByRef(api.db.pool, ref)).id, user.id);
    const { token } = await createPersonalAccessToken(api.db.pool, user.id, "client tests");
    const asBranch = (previewBranch: string) => new ApiClient({ baseURL: api.baseURL, personalAccessToken: token, previewBranch, requestOptions: NO_RETRY });
    await asBranch("feat-a").envvars.create(ref, "preview", { name: "X", value: "a" });
    await asBranch("feat-b").envvars.create(ref, "preview", { name: "X", value: "b" });
    expect((await asBranch("feat-a").envvars.retrieve(ref, "preview", "X")).value).toBe("a");
    expect((await asBranch("feat-b").envvars.retrieve(ref, "preview", "X")).value).toBe("b");
  });
});

describe("waitpoint tokens", () => {
  it("creates, completes and retrieves a token with its output", async () => {
    const token = await waitClient.createToken({ timeout: "1h", tags: ["approval:1"] });
    expect(token).toMatchObject({ id: expect.stringMatching(/^waitpoint_/), isCached: false, url: expect.stringContaining(token.id) });
    expect(token.publicAccessToken).toBeTypeOf("string");
    expect((await waitClient.retrieveToken(token.id)).status).toBe("WAITING");
    expect(await waitClient.completeToken(token.id, { approved: true, at: "noon" })).toEqual({ success: true });
    const done = await waitClient.retrieveToken(token);
    expect(done).toMatchObject({ status: "COMPLETED", output: { approved: true, at: "noon" }, tags: ["approval:1"] });
    expect(done.completedAt).toBeInstanceOf(Date);
  });

  it("returns the cached token for a repeated idempotency key", async () => {
    const first = await waitClient.createToken({ idempotencyKey: "approve-7" });
    const second = await waitClient.createToken({ idempotencyKey: "approve-7" });
    expect(second).toMatchObject({ id: first.id, isCached: true });
  });

  it("completes with the token's own publicAccessToken, from a client holding nothing else", async () => {
    const token = await waitClient.createToken();
    const browser = new ApiClient({ baseURL: api.baseURL, accessToken: token.publicAccessToken!, requestOptions: NO_RETRY });
    expect(await browser.waitpoints.completeToken(token.id, "ok")).toEqual({ success: true });
    expect((await waitClient.retrieveToken(token.id)).output).toBe("ok");
  });

  it("lists tokens across pages with for await, filtered by tag and status", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await waitClient.createToken({ tags: ["list-me"] })).id);
    await waitClient.completeToken(ids[0]!, {});
    const seen: string[] = [];
    for await (const token of waitClient.listTokens({ tags: "list-me", limit: 1 })) seen.push(token.id);
    expect(seen).toEqual([...ids].reverse());
    const waiting = await waitClient.listTokens({ tags: ["list-me"], status: "WAITING" });
    expect(waiting.data.map((t) => t.id).sort()).toEqual(ids.slice(1).sort());
    expect(waiting.data[0]).not.toHaveProperty("output");
  });

  it("maps an unknown token to NotFoundError", async () => {
    await expect(waitClient.retrieveToken("waitpoint_nope")).rejects.toBeInstanceOf(NotFoundError);
    await expect(waitClient.completeToken("waitpoint_nope", 1)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe("schedules", () => {
  beforeAll(async () => {
    await api.db.pool.query(
      `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, kind, worker_version) VALUES ($1, 'nightly', 'task/nightly', 'SCHEDULED', '1')`,
      [api.project.environments.dev.id],
    );
  });

  it("creates (upserting on deduplicationKey), retrieves, updates, deactivates, activates and deletes", async () => {
    const created = await schedulesClient.create({ task: "nightly", cron: "0 3 * * *", deduplicationKey: "nightly-1", timezone: "Europe/London" });
    expect(created).toMatchObject({ id: expect.stringMatching(/^sched_/), type: "IMPERATIVE", active: true, timezone: "Europe/London" });
    expect(created.generator.description).toBeTypeOf("string");
    expect(created.nextRun).toBeInstanceOf(Date);
    const upserted = await schedulesClient.create({ task: "nightly", cron: "30 3 * * *", deduplicationKey: "nightly-1" });
    expect(upserted.id).toBe(created.id);
    expect((await schedulesClient.retrieve("nightly-1")).generator.expression).toBe("30 3 * * *");
    expect((await schedulesClient.update(created.id, { task: "nightly", cron: "0 4 * * *" })).generator.expression).toBe("0 4 * * *");
    expect((await schedulesClient.deactivate(created.id)).active).toBe(false);
    expect((await schedulesClient.activate(created.id)).active).toBe(true);
    expect(await schedulesClient.del(created.id)).toEqual({ id: created.id });
    await expect(schedulesClient.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("lists across offset pages with for await", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await schedulesClient.create({ task: "nightly", cron: `${i} 1 * * *`, deduplicationKey: `page-${i}` })).id);
    const first = await schedulesClient.list({ perPage: 2 });
    expect(first.data).toHaveLength(2);
    expect(first.hasNextPage()).toBe(true);
    const seen: string[] = [];
    for await (const schedule of schedulesClient.list({ perPage: 2 })) seen.push(schedule.id);
    expect(seen.sort()).toEqual(expect.arrayContaining(ids.sort()));
  });

  it("maps invalid cron to UnprocessableEntityError naming the problem", async () => {
    const error = await schedulesClient.create({ task: "nightly", cron: "0 0 * * * *", deduplicationKey: "bad" }).catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.message).toMatch(/seconds/i);
  });
});
