import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FINAL_STATUSES } from "@svc/runtime/engine";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { append, createSession, createSessionOk, sessionBody } from "./sessions-helpers.ts";

const START = new Date("2026-05-01T12:00:00.000Z");
let api: TestApi;
let clock: FakeClock;
beforeAll(async () => {
  clock = new FakeClock(START);
  api = await startTestApi({ clock });
});
afterAll(async () => api?.close());

async function runRow(id: string) {
  const { rows } = await api.db.pool.query(`SELECT * FROM runs WHERE id = $1`, [id]);
  return rows[0];
}

describe("POST /api/v1/sessions", () => {
  it("creates the session and its first run in one go (201), with a 1 h token for both scopes", async () => {
    const res = await createSession(api, { externalId: "chat-1", tags: ["a", "b"], metadata: { user: "ada" } });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      externalId: "chat-1",
      type: "chat.agent",
      taskIdentifier: "chat-agent",
      status: "ACTIVE",
      tags: ["a", "b"],
      metadata: { user: "ada" },
      closedAt: null,
      closedReason: null,
      expiresAt: null,
      isCached: false,
      triggerConfig: { basePayload: { chatId: "c1" } },
    });
    expect(body.id).toMatch(/^session_[a-z0-9]{21}$/);
    expect(body.currentRunId).toBe(body.runId);
    const run = await runRow(body.runId);
    expect(run).toMatchObject({ task_identifier: "chat-agent", status: "QUEUED" });
    expect(JSON.parse(run.payload)).toEqual({ chatId: "c1", sessionId: body.id });
    const claims = decodeJwt(body.publicAccessToken);
    expect(claims.scopes).toEqual(["read:sessions:chat-1", "write:sessions:chat-1"]);
    expect(claims.exp! - claims.iat!).toBe(3600);
  });

  it("triggers the run with the trigger config's options", async () => {
    const body = await createSessionOk(api, { triggerConfig: { basePayload: { x: 1 }, queue: "chats", tags: ["chat:9"], maxAttempts: 2, maxDuration: 60 } });
    const run = await runRow(body.runId);
    expect(run).toMatchObject({ queue_name: "chats", tags: ["chat:9"], max_attempts: 2, max_duration_s: 60 });
  });

  it("returns the open session with that externalId (200, isCached): triggerConfig replaced, tags and metadata kept, same live run", async () => {
    const first = await createSessionOk(api, { externalId: "chat-cached", tags: ["keep"], metadata: { m: 1 } });
    const res = await createSession(api, { externalId: "chat-cached", tags: ["other"], metadata: { m: 2 }, triggerConfig: { basePayload: { v: 2 } } });
    expect(res.statusCode).toBe(200);
    const second = res.json();
    expect(second).toMatchObject({ id: first.id, isCached: true, runId: first.runId, tags: ["keep"], metadata: { m: 1 }, triggerConfig: { basePayload: { v: 2 } } });
  });

  it("starts a new run for a cached session whose run has ended", async () => {
    const first = await createSessionOk(api, { externalId: "chat-ended" });
    await api.db.pool.query(`UPDATE runs SET status = 'COMPLETED' WHERE id = $1`, [first.runId]);
    const second = await createSessionOk(api, { externalId: "chat-ended" });
    expect(second.isCached).toBe(true);
    expect(second.runId).not.toBe(first.runId);
    expect(second.currentRunId).toBe(second.runId);
  });

  it("refuses a closed or expired externalId with 409 (x-should-retry: false)", async () => {
    const closed = await createSessionOk(api, { externalId: "chat-closed" });
    await api.app.inject({ method: "POST", url: `/api/v1/sessions/${closed.id}/close`, headers: api.devAuth, payload: {} });
    const res = await createSession(api, { externalId: "chat-closed" });
    expect(res.statusCode).toBe(409);
    expect(res.headers["x-should-retry"]).toBe("false");
    expect(res.json().error).toMatch(/closed/);

    await createSessionOk(api, { externalId: "chat-expiring", expiresAt: new Date(START.getTime() + 1000).toISOString() });
    clock.advance(2000);
    const expired = await createSession(api, { externalId: "chat-expiring" });
    expect(expired.statusCode).toBe(409);
    expect(expired.json().error).toMatch(/expired/);
  });

  it("refuses bad input with 400 before doing anything", async () => {
    const cases: Record<string, unknown>[] = [
      { type: "" },
      { type: "x".repeat(65) },
      { externalId: "session_abc" },
      { externalId: "" },
      { externalId: "x".repeat(257) },
      { taskIdentifier: "" },
      { triggerConfig: {} },
      { triggerConfig: { basePayload: {}, maxAttempts: 11 } },
      { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) },
      { tags: ["x".repeat(129)] },
      { expiresAt: "not a date" },
      { expiresAt: new Date(START.getTime() - 1000).toISOString() },
      { metadata: "string" },
    ];
    const before = (await api.db.pool.query(`SELECT count(*)::int AS n FROM sessions`)).rows[0].n;
    for (const extra of cases) {
      const res = await createSession(api, extra);
      expect(res.statusCode, JSON.stringify(extra)).toBe(400);
      expect(res.json().error).toEqual(expect.any(String));
    }
    const big = await api.app.inject({ method: "POST", url: "/api/v1/sessions", headers: api.devAuth, payload: sessionBody({ metadata: { pad: "x".repeat(33 * 1024) } }) });
    expect(big.statusCode).toBe(413);
    expect((await api.db.pool.query(`SELECT count(*)::int AS n FROM sessions`)).rows[0].n).toBe(before);
  });
});

describe("GET / PATCH / close", () => {
  it("retrieves by id and by externalId; 404 otherwise", async () => {
    const created = await createSessionOk(api, { externalId: "chat-get" });
    for (const ref of [created.id, "chat-get"]) {
      const res = await api.app.inject({ method: "GET", url: `/api/v1/sessions/${ref}`, headers: api.devAuth });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id: created.id, externalId: "chat-get", currentRunId: created.runId, triggerConfig: { basePayload: { chatId: "c1" } } });
    }
    for (const ref of ["session_nope", "no-such-chat"]) {
      const res = await api.app.inject({ method: "GET", url: `/api/v1/sessions/${ref}`, headers: api.devAuth });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: "Session not found" });
    }
  });

  it("updates tags and metadata (null clears it) and refuses to change externalId (422)", async () => {
    const created = await createSessionOk(api, { externalId: "chat-patch", metadata: { a: 1 } });
    const url = `/api/v1/sessions/chat-patch`;
    const tags = await api.app.inject({ method: "PATCH", url, headers: api.devAuth, payload: { tags: ["x"], metadata: { b: 2 } } });
    expect(tags.json()).toMatchObject({ id: created.id, tags: ["x"], metadata: { b: 2 } });
    const cleared = await api.app.inject({ method: "PATCH", url, headers: api.devAuth, payload: { metadata: null } });
    expect(cleared.json()).toMatchObject({ tags: ["x"], metadata: null });
    const same = await api.app.inject({ method: "PATCH", url, headers: api.devAuth, payload: { externalId: "chat-patch" } });
    expect(same.statusCode).toBe(200);
    for (const externalId of ["other", null]) {
      const res = await api.app.inject({ method: "PATCH", url, headers: api.devAuth, payload: { externalId } });
      expect(res.statusCode).toBe(422);
    }
    const noId = await createSessionOk(api);
    const set = await api.app.inject({ method: "PATCH", url: `/api/v1/sessions/${noId.id}`, headers: api.devAuth, payload: { externalId: "late" } });
    expect(set.statusCode).toBe(422);
  });

  it("closes once (a JSON body is required), refuses appends after, stays readable", async () => {
    const created = await createSessionOk(api);
    const url = `/api/v1/sessions/${created.id}/close`;
    const empty = await api.app.inject({ method: "POST", url, headers: api.devAuth });
    expect(empty.statusCode).toBe(400);
    const closed = await api.app.inject({ method: "POST", url, headers: api.devAuth, payload: { reason: "done" } });
    expect(closed.statusCode).toBe(200);
    expect(closed.json()).toMatchObject({ status: "CLOSED", closedReason: "done", closedAt: clock.now().toISOString() });
    clock.advance(1000);
    const again = await api.app.inject({ method: "POST", url, headers: api.devAuth, payload: { reason: "other" } });
    expect(again.json()).toMatchObject({ closedReason: "done", closedAt: closed.json().closedAt });
    const refused = await append(api, created.id, "in", `{"text":"hi"}`);
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatch(/closed/);
    const read = await api.app.inject({ method: "GET", url: `/api/v1/sessions/${created.id}`, headers: api.devAuth });
    expect(read.json().status).toBe("CLOSED");
  });
});

describe("GET /api/v1/sessions", () => {
  it("filters by type, tags, task, externalId, status and creation time, in cursor pages of 20 by default", async () => {
    const local = await startTestApi({ clock: new FakeClock(START) });
    try {
      const made = [];
      for (let i = 0; i < 23; i++) {
        (local.engine.clock as FakeClock).advance(1000);
        const res = await createSession(local, { externalId: `list-${i}`, type: i % 2 ? "chat.agent" : "other", tags: i % 3 === 0 ? ["three"] : [], taskIdentifier: i < 5 ? "early-task" : "chat-agent" }, local.devAuth);
        made.push(res.json());
      }
      await local.app.inject({ method: "POST", url: `/api/v1/sessions/list-0/close`, headers: local.devAuth, payload: {} });
      const list = async (query: string) => {
        const res = await local.app.inject({ method: "GET", url: `/api/v1/sessions?${query}`, headers: local.devAuth });
        expect(res.statusCode, res.body).toBe(200);
        return res.json() as { data: { id: string; externalId: string; triggerConfig?: unknown }[]; pagination: { next?: string; previous?: string } };
      };
      const first = await list("");
      expect(first.data).toHaveLength(20);
      expect(first.data[0]!.externalId).toBe("list-22");
      expect(first.data[0]!.triggerConfig).toBeUndefined();
      const second = await list(`page[after]=${first.pagination.next}`);
      expect(second.data.map((s) => s.externalId)).toEqual(["list-2", "list-1", "list-0"]);
      expect(second.pagination.next).toBeUndefined();
      expect((await list("filter[type]=other")).data).toHaveLength(12);
      expect((await list("filter[tags]=three")).data).toHaveLength(8);
      expect((await list("filter[taskIdentifier]=early-task")).data).toHaveLength(5);
      expect((await list("filter[externalId]=list-7")).data.map((s) => s.externalId)).toEqual(["list-7"]);
      expect((await list("filter[status]=CLOSED")).data.map((s) => s.externalId)).toEqual(["list-0"]);
      expect((await list("filter[status]=ACTIVE&page[size]=100")).data).toHaveLength(22);
      expect((await list(`filter[createdAt][from]=${START.getTime() + 21_000}`)).data.map((s) => s.externalId)).toEqual(["list-22", "list-21", "list-20"]);
      expect((await list("page[size]=100&filter[createdAt][period]=1h")).data).toHaveLength(23);
      for (const bad of ["filter[status]=OPEN", "page[size]=101", "page[size]=0", "filter[createdAt][period]=2d", "page[after]=x&page[before]=y", "page[after]=garbage"]) {
        const res = await local.app.inject({ method: "GET", url: `/api/v1/sessions?${bad}`, headers: local.devAuth });
        expect(res.statusCode, bad).toBe(400);
      }
    } finally {
      await local.close();
    }
  });
});

describe("runs of a session", () => {
  it("an .in append starts a run when none is alive; the session's runs are listed newest first", async () => {
    const created = await createSessionOk(api, { externalId: "chat-runs" });
    const alive = await append(api, "chat-runs", "in", `{"text":"one"}`);
    expect(alive.statusCode).toBe(200);
    expect(alive.json()).toEqual({ ok: true, seq: 1 });
    await api.db.pool.query(`UPDATE runs SET status = 'COMPLETED' WHERE id = $1`, [created.runId]);
    clock.advance(1000);
    await append(api, "chat-runs", "in", `{"text":"two"}`);
    const session = (await api.app.inject({ method: "GET", url: `/api/v1/sessions/chat-runs`, headers: api.devAuth })).json();
    expect(session.currentRunId).not.toBe(created.runId);
    const newRun = await runRow(session.currentRunId);
    expect(JSON.parse(newRun.payload)).toEqual({ chatId: "c1", sessionId: created.id });
    const runs = await api.app.inject({ method: "GET", url: `/api/v1/sessions/chat-runs/runs`, headers: api.devAuth });
    expect(runs.statusCode).toBe(200);
    expect(runs.json().data.map((r: { id: string }) => r.id)).toEqual([session.currentRunId, created.runId]);
    const filtered = await api.app.inject({ method: "GET", url: `/api/v1/runs?filter[session]=chat-runs`, headers: api.devAuth });
    expect(filtered.json().data.map((r: { id: string }) => r.id)).toEqual([session.currentRunId, created.runId]);
  });

  it("end-and-continue hands over to a new run once; a stale caller is told swapped: false", async () => {
    const created = await createSessionOk(api);
    const url = `/api/v1/sessions/${created.id}/end-and-continue`;
    const res = await api.app.inject({ method: "POST", url, headers: api.devAuth, payload: { callingRunId: created.runId, reason: "upgrade" } });
    expect(res.statusCode).toBe(200);
    const { runId, swapped } = res.json();
    expect(swapped).toBe(true);
    expect(runId).not.toBe(created.runId);
    expect(JSON.parse((await runRow(runId)).payload)).toEqual({ chatId: "c1", sessionId: created.id, previousRunId: created.runId, continuation: true });
    const stale = await api.app.inject({ method: "POST", url, headers: api.devAuth, payload: { callingRunId: created.runId, reason: "upgrade" } });
    expect(stale.json()).toEqual({ runId, swapped: false });
    const unknown = await api.app.inject({ method: "POST", url, headers: api.devAuth, payload: { callingRunId: "run_nope", reason: "x" } });
    expect(unknown.statusCode).toBe(404);
    await api.app.inject({ method: "POST", url: `/api/v1/sessions/${created.id}/close`, headers: api.devAuth, payload: {} });
    const closed = await api.app.inject({ method: "POST", url, headers: api.devAuth, payload: { callingRunId: runId, reason: "x" } });
    expect(closed.statusCode).toBe(400);
  });

  it("end-and-continue with the session's public token never leaves two live runs: refused from a live run, a restart once it ended", async () => {
    const created = await createSessionOk(api);
    const url = `/api/v1/sessions/${created.id}/end-and-continue`;
    const browser = { authorization: `Bearer ${created.publicAccessToken}` };
    const liveRuns = async () =>
      (await api.db.pool.query(`SELECT r.id FROM session_runs sr JOIN runs r ON r.id = sr.run_id WHERE sr.session_id = $1 AND r.status <> ALL($2)`, [created.id, FINAL_STATUSES])).rows.map((r) => r.id);
    for (let i = 0; i < 3; i++) {
      const res = await api.app.inject({ method: "POST", url, headers: browser, payload: { callingRunId: created.runId, reason: "again" } });
      expect(res.statusCode).toBe(403);
      expect(res.json().error).toMatch(new RegExp(`^Run ${created.runId} is still [A-Z_]+: only the run itself \\(with the secret key\\) hands a session over from a live run$`));
    }
    expect(await liveRuns()).toEqual([created.runId]);
    // Once the run has ended, the browser may restart the session: one new run, and only one.
    expect((await api.app.inject({ method: "POST", url: `/api/v2/runs/${created.runId}/cancel`, headers: api.devAuth })).statusCode).toBe(200);
    const restarted = await api.app.inject({ method: "POST", url, headers: browser, payload: { callingRunId: created.runId, reason: "restart" } });
    expect(restarted.statusCode).toBe(200);
    const { runId, swapped } = restarted.json();
    expect(swapped).toBe(true);
    const again = await api.app.inject({ method: "POST", url, headers: browser, payload: { callingRunId: created.runId, reason: "restart" } });
    expect(again.json()).toEqual({ runId, swapped: false });
    const fromTheNewRun = await api.app.inject({ method: "POST", url, headers: browser, payload: { callingRunId: runId, reason: "again" } });
    expect(fromTheNewRun.statusCode).toBe(403);
    expect(await liveRuns()).toEqual([runId]);
  });
});
