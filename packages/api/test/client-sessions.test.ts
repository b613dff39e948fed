// Sessions through the client (start, retrieve, update, close, list, end-and-continue, runs),
// against the real API on a loopback port.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  ApiClient,
  BadRequestError,
  configure,
  ConflictError,
  NotFoundError,
  PermissionDeniedError,
  sessionsClient,
  type SessionStatus,
  type StartSessionOptions,
} from "@svc/runtime";
import { clearServiceEnvironment, NO_RETRY, startListeningApi, type ListeningApi } from "./client-server.ts";
import { FakeClock } from "./harness.ts";

let api: ListeningApi;
// Each session is created a second after the previous one: list order and time filters are exact.
const clock = new FakeClock(Date.now());

beforeAll(async () => {
  api = await startListeningApi({ clock });
});
afterAll(async () => api?.close());
beforeEach(() => {
  clock.advance(1000);
  clearServiceEnvironment();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
});

function startOptions(extra: Partial<StartSessionOptions> = {}): StartSessionOptions {
  return { type: "chat.agent", taskIdentifier: "chat-agent", triggerConfig: { basePayload: { chatId: "c1" } }, ...extra };
}

describe("start and retrieve", () => {
  it("starts a session with its first run and a token, returns it again for the same open externalId, and reads it by either name", async () => {
    const expiresAt = new Date(clock.now().getTime() + 3_600_000);
    const created = await sessionsClient.start(startOptions({ externalId: "client-start", tags: ["vip"], metadata: { plan: "pro" }, expiresAt }));
    expect(created).toMatchObject({
      id: expect.stringMatching(/^session_/),
      externalId: "client-start",
      status: "ACTIVE",
      tags: ["vip"],
      metadata: { plan: "pro" },
      runId: expect.stringMatching(/^run_/),
      publicAccessToken: expect.any(String),
      isCached: false,
      closedAt: null,
      currentRunId: created.runId,
      triggerConfig: { basePayload: { chatId: "c1" } },
    });
    expect(created.createdAt).toBeInstanceOf(Date);
    expect(created.updatedAt).toBeInstanceOf(Date);
    expect(created.expiresAt).toEqual(expiresAt);

    const again = await sessionsClient.start(startOptions({ externalId: "client-start", triggerConfig: { basePayload: { chatId: "c2" } } }));
    expect(again).toMatchObject({ id: created.id, isCached: true, runId: created.runId, triggerConfig: { basePayload: { chatId: "c2" } } });

    const byId = await sessionsClient.retrieve(created.id);
    const byExternalId = await sessionsClient.retrieve("client-start");
    expect(byExternalId).toEqual(byId);
    expect(byId).toMatchObject({ id: created.id, currentRunId: created.runId, tags: ["vip"] });
    expect(byId.createdAt).toEqual(created.createdAt);
  });

  it("works through an explicit ApiClient too, and its public token reads the session", async () => {
    const client = new ApiClient({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
    const created = await client.sessions.start(startOptions({ externalId: "client-explicit" }));
    const browser = new ApiClient({ baseURL: api.baseURL, accessToken: created.publicAccessToken, requestOptions: NO_RETRY });
    expect((await browser.sessions.retrieve("client-explicit")).id).toBe(created.id);
  });
});

describe("update and close", () => {
  it("replaces tags and metadata, clears metadata with null, then closes once with a reason", async () => {
    const created = await sessionsClient.start(startOptions({ metadata: { a: 1 } }));
    const tagged = await sessionsClient.update(created.id, { tags: ["x", "y"] });
    expect(tagged).toMatchObject({ tags: ["x", "y"], metadata: { a: 1 } });
    expect(tagged.updatedAt).toBeInstanceOf(Date);
    expect((await sessionsClient.update(created.id, { metadata: { b: 2 } })).metadata).toEqual({ b: 2 });
    expect((await sessionsClient.update(created.id, { metadata: null })).metadata).toBeNull();

    const closed = await sessionsClient.close(created.id, { reason: "user left" });
    expect(closed).toMatchObject({ status: "CLOSED", closedReason: "user left" });
    expect(closed.closedAt).toBeInstanceOf(Date);
    // No options: the client still sends the JSON body the route requires.
    const again = await sessionsClient.close(created.id);
    expect(again).toMatchObject({ status: "CLOSED", closedReason: "user left", closedAt: closed.closedAt });
  });

  it("closes without a reason", async () => {
    const created = await sessionsClient.start(startOptions());
    expect(await sessionsClient.close(created.id)).toMatchObject({ status: "CLOSED", closedReason: null });
  });
});

describe("list", () => {
  it("filters by type, tag, task, externalId, status and creation time, and walks every page with for await", async () => {
    const type = "client.list";
    const made = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      made.push(await sessionsClient.start(startOptions({ type, externalId: `client-list-${i}`, tags: i % 2 ? ["odd"] : [], taskIdentifier: i < 2 ? "early-task" : "chat-agent" })));
    }
    await sessionsClient.close("client-list-0");

    const page = await sessionsClient.list({ type, limit: 2 });
    expect(page.data.map((s) => s.externalId)).toEqual(["client-list-4", "client-list-3"]);
    expect(page.hasNextPage()).toBe(true);
    expect(page.data[0]!.createdAt).toBeInstanceOf(Date);
    expect(page.data[0]!.triggerConfig).toBeUndefined();

    const all = [];
    for await (const session of sessionsClient.list({ type, limit: 2 })) all.push(session.externalId);
    expect(all).toEqual(["client-list-4", "client-list-3", "client-list-2", "client-list-1", "client-list-0"]);

    const names = async (filter: Parameters<typeof sessionsClient.list>[0]) => {
      const out = [];
      for await (const session of sessionsClient.list({ type, ...filter })) out.push(session.externalId);
      return out;
    };
    expect(await names({ tag: "odd" })).toEqual(["client-list-3", "client-list-1"]);
    expect(await names({ taskIdentifier: ["early-task"] })).toEqual(["client-list-1", "client-list-0"]);
    expect(await names({ externalId: "client-list-2" })).toEqual(["client-list-2"]);
    expect(await names({ status: "CLOSED" })).toEqual(["client-list-0"]);
    expect(await names({ status: ["ACTIVE", "EXPIRED"] })).toHaveLength(4);
    expect(await names({ from: made[3]!.createdAt })).toEqual(["client-list-4", "client-list-3"]);
    expect(await names({ to: made[1]!.createdAt.getTime() })).toEqual(["client-list-1", "client-list-0"]);
    expect(await names({ period: "1h" })).toHaveLength(5);
    expect(await names({ type: ["client.list", "no-such-type"], after: page.pagination.next, limit: 10 })).toEqual(["client-list-2", "client-list-1", "client-list-0"]);
  });
});

describe("runs of a session", () => {
  it("hands over with endAndContinue once, then lists both runs newest first as runs.list items", async () => {
    const created = await sessionsClient.start(startOptions({ externalId: "client-runs" }));
    clock.advance(1000);
    const handed = await sessionsClient.endAndContinue("client-runs", { callingRunId: created.runId, reason: "upgrade" });
    expect(handed).toEqual({ runId: expect.stringMatching(/^run_/), swapped: true });
    expect(handed.runId).not.toBe(created.runId);
    expect(await sessionsClient.endAndContinue(created.id, { callingRunId: created.runId, reason: "upgrade" })).toEqual({ runId: handed.runId, swapped: false });

    const page = await sessionsClient.listRuns("client-runs");
    expect(page.data.map((run) => run.id)).toEqual([handed.runId, created.runId]);
    expect(page.data[0]).toMatchObject({ taskIdentifier: "chat-agent", status: expect.any(String) });
    expect(page.data[0]!.createdAt).toBeInstanceOf(Date);
    const walked = [];
    for await (const run of sessionsClient.listRuns(created.id, { limit: 1 })) walked.push(run.id);
    expect(walked).toEqual([handed.runId, created.runId]);
    expect((await sessionsClient.listRuns(created.id, { taskIdentifier: "other-task" })).data).toEqual([]);
  });
});

describe("bad input", () => {
  it("surfaces each refusal as its ApiError subclass with the server's message", async () => {
    const closed = await sessionsClient.start(startOptions({ externalId: "client-closed" }));
    await sessionsClient.close("client-closed");
    const conflict = await sessionsClient.start(startOptions({ externalId: "client-closed" })).catch((e) => e);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict.message).toMatch(/closed/);
    await expect(sessionsClient.start(startOptions({ externalId: "session_mine" }))).rejects.toBeInstanceOf(BadRequestError);
    await expect(sessionsClient.start({ type: "", taskIdentifier: "t", triggerConfig: { basePayload: {} } })).rejects.toBeInstanceOf(BadRequestError);
    await expect(sessionsClient.retrieve("session_missing")).rejects.toBeInstanceOf(NotFoundError);
    await expect(sessionsClient.retrieve("no-such-external-id")).rejects.toBeInstanceOf(NotFoundError);
    await expect(sessionsClient.update(closed.id, { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) })).rejects.toBeInstanceOf(BadRequestError);
    await expect(sessionsClient.close("session_missing")).rejects.toBeInstanceOf(NotFoundError);
    await expect(sessionsClient.endAndContinue(closed.id, { callingRunId: closed.runId, reason: "x" })).rejects.toBeInstanceOf(BadRequestError);
    const open = await sessionsClient.start(startOptions());
    await expect(sessionsClient.endAndContinue(open.id, { callingRunId: "run_nope", reason: "x" })).rejects.toBeInstanceOf(NotFoundError);
    await expect(sessionsClient.list({ status: "OPEN" as SessionStatus })).rejects.toBeInstanceOf(BadRequestError);
    await expect(sessionsClient.list({ limit: 101 })).rejects.toBeInstanceOf(BadRequestError);
    await expect(sessionsClient.listRuns("session_missing")).rejects.toBeInstanceOf(NotFoundError);

    const browser = new ApiClient({ baseURL: api.baseURL, accessToken: open.publicAccessToken, requestOptions: NO_RETRY });
    await expect(browser.sessions.update(open.id, { tags: [] })).rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(browser.sessions.close(open.id)).rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(browser.sessions.retrieve(closed.id)).rejects.toBeInstanceOf(PermissionDeniedError);
  });
});
