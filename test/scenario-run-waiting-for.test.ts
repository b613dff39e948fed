import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configure as configureTriggerSdk, runs as triggerRuns } from "@trigger.dev/sdk";
import { FakeClock, triggerRun } from "../packages/runtime/src/engine/index.ts";
import { batchTriggerAndWait, forToken, task, triggerAndWait, waitFor } from "../packages/runtime/src/sdk/index.ts";
import { configure as configureSvcClient, runs as svcRuns, sessions } from "../packages/runtime/src/index.ts";
import { startTestWorker, type TestWorker } from "../packages/worker/test/harness.ts";
import { startTestApi, type TestApi } from "../packages/api/test/harness.ts";
import { OpenApiChecker } from "../packages/api/test/openapi-checker.ts";
import { createTokenOk } from "../packages/api/test/waitpoints-helpers.ts";

// End to end across packages (the API and a real worker): a WAITING run says what it waits on, in
// `waitingFor` of GET /api/v3/runs/{id} and of the run list's items, by waitpoint type, with what it
// takes to end the wait; checked against the served OpenAPI document, and read by the published
// @trigger.dev/sdk (which does not know the field) and by the @svc/runtime client.
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
let api: TestApi;
let tw: TestWorker;
let baseURL: string;
let checker: OpenApiChecker;

const approval = task({ id: "approval", run: async (payload: { tokenId: string }) => (await forToken<{ ok: boolean }>(payload.tokenId)).unwrap() });
const sleeper = task({
  id: "sleeper",
  run: async () => {
    await waitFor({ minutes: 5 });
    return "woke";
  },
});
const parent = task({ id: "parent", run: async (payload: { tokenId: string }) => (await triggerAndWait("approval", payload)).unwrap() });
const fanOut = task({
  id: "fan-out",
  run: async (payload: { tokenId: string }) => (await batchTriggerAndWait("approval", [{ payload }])).runs.map((run) => run.ok),
});
const listener = task({
  id: "listener",
  run: async (payload: { sessionId: string }) => {
    const message = await sessions.open(payload.sessionId).in.wait<{ text: string }>({ timeout: "1h" });
    return message.ok ? message.output.text : null;
  },
});

beforeAll(async () => {
  api = await startTestApi({ clock });
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  baseURL = `http://127.0.0.1:${(api.app.server.address() as { port: number }).port}`;
  api.engine.apiUrl = baseURL;
  tw = await startTestWorker(api, [approval, sleeper, parent, fanOut, listener]);
  tw.worker.events.on("runSuspended", (e) => suspendedRuns.add(e.runId));
  const secretKey = api.project.environments.dev.secretKey;
  configureTriggerSdk({ baseURL, secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  configureSvcClient({ baseURL, secretKey });
  checker = new OpenApiChecker((await api.app.inject({ method: "GET", url: "/api/openapi.json" })).json());
});
afterAll(async () => {
  await tw?.stop();
  await api?.close();
});

/** Runs the worker suspended so far: a run may suspend before the test learns its id. */
const suspendedRuns = new Set<string>();
async function suspension(runId: string): Promise<void> {
  if (!suspendedRuns.has(runId)) await tw.worker.events.next("runSuspended", (e) => e.runId === runId);
}

/** GET a run API path, checked against the OpenAPI document. */
async function get(route: string, url: string) {
  const res = await api.app.inject({ method: "GET", url, headers: api.devAuth });
  expect(res.statusCode).toBe(200);
  expect(checker.check({ method: "GET", route, status: res.statusCode, headers: res.headers, body: res.body })).toEqual([]);
  return res.json();
}

async function retrieve(runId: string) {
  return get("/api/v3/runs/:runId", `/api/v3/runs/${runId}`);
}

/** The run's item in the run list (filtered on its task). */
async function listItem(runId: string, taskIdentifier: string) {
  const page = await get("/api/v1/runs", `/api/v1/runs?filter[taskIdentifier]=${taskIdentifier}&page[size]=100`);
  const item = page.data.find((run: { id: string }) => run.id === runId);
  expect(item).toBeDefined();
  return item;
}

/** Triggers a run and waits until it suspends in its first wait. */
async function suspended(taskIdentifier: string, payload: unknown): Promise<string> {
  const { id } = await triggerRun(api.engine, api.env, taskIdentifier, payload);
  await suspension(id);
  return id;
}

/** The run's end (subscribe before ending its wait). */
function finishing(runId: string) {
  return tw.worker.events.next("runFinished", (e) => e.runId === runId);
}

async function completeToken(tokenId: string, output: unknown) {
  const res = await api.app.inject({ method: "POST", url: `/api/v1/waitpoints/tokens/${tokenId}/complete`, headers: api.devAuth, payload: { data: output } });
  expect(res.statusCode).toBe(200);
}

describe("waitingFor: what a WAITING run waits on", () => {
  it("names the token a run waits on (retrieve, list, both clients), and nothing once the token is completed", async () => {
    const token = await createTokenOk(api, { timeout: "1h" });
    const runId = await suspended("approval", { tokenId: token.id });
    const expected = [{ type: "MANUAL", id: token.id, timeoutAt: new Date(clock.now().getTime() + 3_600_000).toISOString() }];

    const run = await retrieve(runId);
    expect(run).toMatchObject({ status: "WAITING", isWaiting: true, waitingFor: expected });
    expect((await listItem(runId, "approval")).waitingFor).toEqual(expected);

    // The published SDK ignores the field it does not know and reads the run as before.
    const viaTrigger = await triggerRuns.retrieve(runId);
    expect(viaTrigger).toMatchObject({ id: runId, status: "WAITING", isWaiting: true, taskIdentifier: "approval" });
    // The svc client types it, with its times as Dates.
    const viaSvc = await svcRuns.retrieve(runId);
    expect(viaSvc.waitingFor).toEqual([{ type: "MANUAL", id: token.id, timeoutAt: new Date(expected[0]!.timeoutAt) }]);
    const listed = (await svcRuns.list({ taskIdentifier: "approval", status: "WAITING" })).data.find((r) => r.id === runId);
    expect(listed?.waitingFor).toEqual(viaSvc.waitingFor);

    const finished = finishing(runId);
    await completeToken(token.id, { ok: true });
    expect((await finished).status).toBe("COMPLETED");
    expect(await retrieve(runId)).toMatchObject({ status: "COMPLETED", waitingFor: [] });
    expect((await listItem(runId, "approval")).waitingFor).toEqual([]);
  });

  it("names the child run a parent waits on in triggerAndWait, while the child names its token", async () => {
    const token = await createTokenOk(api, { timeout: "1h" });
    const runId = await suspended("parent", { tokenId: token.id });
    const childId: string = (await retrieve(runId)).relatedRuns.children[0].id;
    const waitpoints = await api.db.pool.query<{ id: string }>(`SELECT id FROM waitpoints WHERE completed_by_run_id = $1`, [childId]);
    expect((await retrieve(runId)).waitingFor).toEqual([{ type: "RUN", id: waitpoints.rows[0]!.id, runId: childId }]);
    expect((await listItem(runId, "parent")).waitingFor).toEqual([{ type: "RUN", id: waitpoints.rows[0]!.id, runId: childId }]);

    await suspension(childId);
    expect((await retrieve(childId)).waitingFor).toEqual([{ type: "MANUAL", id: token.id, timeoutAt: expect.any(String) }]);

    const finished = finishing(runId);
    await completeToken(token.id, { ok: true });
    expect((await finished).status).toBe("COMPLETED");
    expect((await retrieve(runId)).waitingFor).toEqual([]);
    expect((await retrieve(childId)).waitingFor).toEqual([]);
  });

  it("names the batch a run waits on in batchTriggerAndWait", async () => {
    const token = await createTokenOk(api, { timeout: "1h" });
    const runId = await suspended("fan-out", { tokenId: token.id });
    const child = (await retrieve(runId)).relatedRuns.children[0];
    expect(child.batchId).toMatch(/^batch_/);
    expect((await retrieve(runId)).waitingFor).toEqual([{ type: "BATCH", id: expect.stringMatching(/^waitpoint_/), batchId: child.batchId }]);

    const finished = finishing(runId);
    await completeToken(token.id, { ok: true });
    expect((await finished).status).toBe("COMPLETED");
    expect((await retrieve(runId)).waitingFor).toEqual([]);
  });

  it("gives the resume time of a sleeping run", async () => {
    const runId = await suspended("sleeper", {});
    const waitingFor = (await retrieve(runId)).waitingFor;
    expect(waitingFor).toEqual([{ type: "DATETIME", id: expect.stringMatching(/^waitpoint_/), resumeAt: new Date(clock.now().getTime() + 5 * 60_000).toISOString() }]);
    expect((await listItem(runId, "sleeper")).waitingFor).toEqual(waitingFor);

    const canceled = await api.app.inject({ method: "POST", url: `/api/v2/runs/${runId}/cancel`, headers: api.devAuth });
    expect(canceled.statusCode).toBe(200);
    expect(await retrieve(runId)).toMatchObject({ status: "CANCELED", waitingFor: [] });
  });

  it("names the session and channel a run waits on for its next message", async () => {
    const started = await api.app.inject({
      method: "POST",
      url: "/api/v1/sessions",
      headers: api.devAuth,
      payload: { type: "chat.agent", externalId: "waiting-for-chat", taskIdentifier: "listener", triggerConfig: { basePayload: {} } },
    });
    expect(started.statusCode).toBe(201);
    const session = started.json() as { id: string; runId: string };
    await suspension(session.runId);
    expect((await retrieve(session.runId)).waitingFor).toEqual([
      { type: "SESSION", id: expect.stringMatching(/^waitpoint_/), sessionId: session.id, channel: "in", timeoutAt: new Date(clock.now().getTime() + 3_600_000).toISOString() },
    ]);

    const finished = finishing(session.runId);
    const appended = await api.app.inject({ method: "POST", url: `/realtime/v1/sessions/${session.id}/in/append`, headers: api.devAuth, payload: { text: "hi" } });
    expect(appended.statusCode).toBe(200);
    expect((await finished).status).toBe("COMPLETED");
    expect((await retrieve(session.runId)).waitingFor).toEqual([]);
  });
});
