import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { auth, ConflictError, configure, NotFoundError, PermissionDeniedError, sessions, UnprocessableEntityError } from "@trigger.dev/sdk";
import { startListeningApi, type ListeningApi } from "./client-server.ts";
import { drain } from "./sessions-helpers.ts";

// The published SDK, unchanged, against svc on a real port. No worker runs: session runs stay QUEUED.
let api: ListeningApi;
beforeAll(async () => {
  api = await startListeningApi();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => api?.close());

const TASK = "chat-agent";
const start = (externalId: string | undefined, extra: Record<string, unknown> = {}) =>
  sessions.start({ type: "chat.agent", ...(externalId ? { externalId } : {}), taskIdentifier: TASK, triggerConfig: { basePayload: { chatId: externalId ?? "none" } }, ...extra });

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** Appends to a channel with the secret key over plain HTTP (how a task writes `.out` without S2). */
async function appendOverHttp(ref: string, io: "in" | "out", body: string): Promise<number> {
  const res = await fetch(`${api.baseURL}/realtime/v1/sessions/${encodeURIComponent(ref)}/${io}/append`, { method: "POST", headers: { ...api.devAuth, "content-type": "application/json" }, body });
  expect(res.status).toBe(200);
  return ((await res.json()) as { seq: number }).seq;
}

/** Stores a control record on `.out` as the task's SDK writes one (an empty body, a trigger-control header). */
async function appendControlRecord(sessionId: string, subtype: string): Promise<number> {
  const { rows } = await api.db.pool.query<{ out_seq: string }>(`UPDATE sessions SET out_seq = out_seq + 1 WHERE id = $1 RETURNING out_seq`, [sessionId]);
  const seq = Number(rows[0]!.out_seq);
  await api.db.pool.query(`INSERT INTO session_records (session_id, io, seq, part_id, data, headers, created_at) VALUES ($1, 'out', $2, $3, NULL, $4, now())`, [
    sessionId,
    seq,
    `control-${seq}`,
    JSON.stringify([["trigger-control", subtype]]),
  ]);
  return seq;
}

/**
 * Reads `.out` through the SDK until `count` chunks arrived, then stops reading. `afterFirst` runs
 * once the first chunk is in: the subscription is live by then.
 */
async function readOut(ref: string, count: number, onControl: (control: { subtype: string; seqNum: number }) => void, afterFirst?: () => Promise<void>) {
  const stream = await sessions.open(ref).out.read({ timeoutInSeconds: 30, onControl });
  const chunks: unknown[] = [];
  const reader = stream.getReader();
  while (chunks.length < count) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    if (chunks.length === 1) await afterFirst?.();
  }
  await reader.cancel();
  return chunks;
}

describe("@trigger.dev/sdk sessions against svc", () => {
  it("sessions.start creates a session and its run (isCached false); the same externalId returns it (isCached true)", async () => {
    const first = await start("sdk-chat-1", { tags: ["sdk", "one"], metadata: { user: "ada" } });
    expect(first).toMatchObject({ externalId: "sdk-chat-1", type: "chat.agent", taskIdentifier: TASK, isCached: false, tags: ["sdk", "one"], metadata: { user: "ada" }, closedAt: null, expiresAt: null });
    expect(first.id).toMatch(/^session_/);
    expect(first.runId).toMatch(/^run_/);
    expect(first.currentRunId).toBe(first.runId);
    expect(first.createdAt).toBeInstanceOf(Date);
    expect(first.publicAccessToken.split(".")).toHaveLength(3);
    const again = await start("sdk-chat-1");
    expect(again).toMatchObject({ id: first.id, runId: first.runId, isCached: true, tags: ["sdk", "one"] });
  });

  it("sessions.retrieve by id and by externalId; an unknown one is a NotFoundError", async () => {
    const s = await start("sdk-chat-retrieve");
    for (const ref of [s.id, "sdk-chat-retrieve"]) {
      const got = await sessions.retrieve(ref);
      expect(got).toMatchObject({ id: s.id, externalId: "sdk-chat-retrieve", currentRunId: s.runId, triggerConfig: { basePayload: { chatId: "sdk-chat-retrieve" } } });
      expect(got.updatedAt).toBeInstanceOf(Date);
    }
    await expect(sessions.retrieve("session_doesnotexist")).rejects.toBeInstanceOf(NotFoundError);
    await expect(sessions.retrieve("no-such-chat")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("sessions.update replaces tags and metadata; a changed externalId is an UnprocessableEntityError", async () => {
    const s = await start("sdk-chat-update", { metadata: { a: 1 } });
    const updated = await sessions.update("sdk-chat-update", { tags: ["x", "y"], metadata: { b: 2 } });
    expect(updated).toMatchObject({ id: s.id, tags: ["x", "y"], metadata: { b: 2 } });
    expect((await sessions.update(s.id, { metadata: null })).metadata).toBeNull();
    await expect(sessions.update(s.id, { externalId: "another" })).rejects.toBeInstanceOf(UnprocessableEntityError);
  });

  it("sessions.list filters and iterates across pages", async () => {
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await start(`sdk-list-${i}`, { type: "sdk.list", tags: i % 2 ? ["odd"] : ["even"] }));
    const other = await sessions.start({ type: "sdk.list", externalId: "sdk-list-other-task", taskIdentifier: "other-task", triggerConfig: { basePayload: {} } });
    await sessions.close(made[0]!.id);

    const all = await collect(sessions.list({ type: "sdk.list", limit: 2 }));
    expect(all.map((s) => s.id)).toEqual([other.id, ...made.map((s) => s.id).reverse()]);
    expect(all[0]!.triggerConfig).toBeUndefined();

    const ids = async (options: Parameters<typeof sessions.list>[0]) => (await collect(sessions.list(options))).map((s) => s.id);
    expect(await ids({ type: "sdk.list", tag: "odd" })).toEqual([made[3]!.id, made[1]!.id]);
    expect(await ids({ type: ["sdk.list", "nothing"], taskIdentifier: "other-task" })).toEqual([other.id]);
    expect(await ids({ externalId: "sdk-list-2" })).toEqual([made[2]!.id]);
    expect(await ids({ type: "sdk.list", status: "CLOSED" })).toEqual([made[0]!.id]);
    expect(await ids({ type: "sdk.list", status: ["ACTIVE", "CLOSED"], period: "1h", limit: 3 })).toHaveLength(6);
    expect(await ids({ type: "sdk.list", from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 60_000) })).toHaveLength(6);
    expect(await ids({ type: "sdk.list", to: new Date(Date.now() - 3_600_000) })).toEqual([]);
  });

  it("sessions.close closes once; the closed externalId cannot start again (ConflictError)", async () => {
    const s = await start("sdk-chat-close");
    const closed = await sessions.close("sdk-chat-close", { reason: "done" });
    expect(closed).toMatchObject({ id: s.id, closedReason: "done" });
    expect(closed.closedAt).toBeInstanceOf(Date);
    const again = await sessions.close(s.id);
    expect(again.closedAt!.getTime()).toBe(closed.closedAt!.getTime());
    expect(again.closedReason).toBe("done");
    await expect(start("sdk-chat-close")).rejects.toBeInstanceOf(ConflictError);
  });

  it("sessions.open(id).in.send appends once per send, under the X-Part-Id the SDK sends", async () => {
    const s = await start("sdk-chat-send");
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    await sessions.open(s.id).in.send({ text: "hello" });
    await sessions.open("sdk-chat-send").in.send("plain text");
    const partIds = fetchSpy.mock.calls
      .filter(([url]) => String(url).endsWith("/in/append"))
      .map(([, init]) => new Headers(init?.headers).get("x-part-id"));
    expect(partIds).toHaveLength(2);
    expect(partIds.every((id) => typeof id === "string" && id.length === 21)).toBe(true);
    const records = (await drain(api, s.id, "in")).json().records;
    expect(records).toEqual([
      { data: `{"text":"hello"}`, id: partIds[0], seqNum: 1 },
      { data: "plain text", id: partIds[1], seqNum: 2 },
    ]);
  });

  it("sessions.open(id).out.read() receives .out records (SSE v2), live ones too, and routes a control record to onControl", async () => {
    const s = await start("sdk-chat-read");
    await appendOverHttp(s.id, "out", `{"delta":"Hel"}`);
    await appendOverHttp(s.id, "out", `{"delta":"lo"}`);
    const controlSeq = await appendControlRecord(s.id, "turn-complete");
    const controls: { subtype: string; seqNum: number }[] = [];
    const chunks = await readOut("sdk-chat-read", 3, (control) => controls.push(control), async () => {
      await appendOverHttp(s.id, "out", `{"delta":"!"}`);
    });
    expect(chunks).toEqual([`{"delta":"Hel"}`, `{"delta":"lo"}`, `{"delta":"!"}`]);
    expect(controls).toMatchObject([{ subtype: "turn-complete", seqNum: controlSeq }]);
  });

  it("a token from auth.createPublicToken with read and write session scopes sends on .in and reads .out; not another session's", async () => {
    const s = await start("sdk-chat-token");
    const other = await start("sdk-chat-token-other");
    const token = await auth.createPublicToken({ scopes: { read: { sessions: s.id }, write: { sessions: [s.id] } } });
    await auth.withAuth({ accessToken: token }, () => sessions.open("sdk-chat-token").in.send({ text: "from the browser" }));
    expect((await drain(api, s.id, "in")).json().records.map((r: { data: string }) => r.data)).toEqual([`{"text":"from the browser"}`]);

    await appendOverHttp(s.id, "out", `{"reply":"hi"}`);
    const chunks = await auth.withAuth({ accessToken: token }, () => readOut(s.id, 1, () => {}));
    expect(chunks).toEqual([`{"reply":"hi"}`]);

    await expect(auth.withAuth({ accessToken: token }, () => sessions.open(other.id).in.send("nope"))).rejects.toBeInstanceOf(PermissionDeniedError);
    // The token sessions.start returned works the same way.
    await auth.withAuth({ accessToken: other.publicAccessToken }, () => sessions.open(other.id).in.send("mine"));
    expect((await drain(api, other.id, "in")).json().records.map((r: { data: string }) => r.data)).toEqual(["mine"]);
  });
});
