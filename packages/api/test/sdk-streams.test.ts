import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, configure, runs, streams, tasks } from "@trigger.dev/sdk";
import { ApiClient } from "@trigger.dev/core/v3";
import { MAX_STREAM_CHUNK_BYTES, MAX_STREAM_CHUNKS, MAX_STREAMS_PER_RUN } from "@svc/runtime/engine";
import { startListeningApi, type ListeningApi } from "./client-server.ts";

// The published SDK's realtime and input stream calls, unchanged, against svc on a real port:
// a backend appends chunks (the API client's createStream / appendToStream: the SDK's
// `streams.append` does nothing outside a task), readers read them (`streams.read`, fetchStream, `runs.subscribeToRun().withStreams()`)
// and send input (`streams.input().send`, createInputStreamWaitpoint). No worker runs here: the
// runs stay QUEUED until canceled (test/scenario-run-streams has task code writing and waiting).
let api: ListeningApi;
let client: ApiClient;
beforeAll(async () => {
  api = await startListeningApi({ limits: { realtimeLivePollMs: 5000 } });
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  client = new ApiClient(api.baseURL, api.project.environments.dev.secretKey, undefined, { retry: { maxAttempts: 1 } });
});
afterAll(async () => api?.close());

async function collect<T>(stream: AsyncIterable<T>, n?: number): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) {
    out.push(item);
    if (n !== undefined && out.length === n) break;
  }
  return out;
}

const secretAuth = () => ({ authorization: `Bearer ${api.project.environments.dev.secretKey}` });

describe("realtime streams", () => {
  it("appends chunks from a backend, which streams.read returns in order, resuming from a chunk", async () => {
    const { id } = await tasks.trigger("streams-task", {});
    for (const chunk of ["one", "two", "three"]) expect(await client.appendToStream(id, "self", "log", chunk)).toEqual({ ok: true });
    // Ends after a second without a new chunk (the run is still QUEUED).
    expect(await collect(await streams.read(id, "log", { timeoutInSeconds: 1 }))).toEqual(["one", "two", "three"]);
    // From the second chunk on: chunks are numbered from 1, so startIndex 2 resumes after chunk 1.
    expect(await collect(await streams.read(id, "log", { timeoutInSeconds: 1, startIndex: 2 }))).toEqual(["two", "three"]);
    // The API client's fetchStream with Last-Event-ID, as a reconnect sends it.
    const parts: { id: string; chunk: unknown }[] = [];
    const rest = await client.fetchStream(id, "log", { lastEventId: "2", timeoutInSeconds: 1, onPart: (p) => parts.push({ id: p.id, chunk: p.chunk }) });
    expect(await collect(rest)).toEqual(["three"]);
    expect(parts).toEqual([{ id: "3", chunk: "three" }]);
    // X-Trigger-Stream-Start: latest (from: "latest"): only chunks appended from now on (none: it ends idle).
    expect(await collect(await client.fetchStream(id, "log", { from: "latest", timeoutInSeconds: 1 }))).toEqual([]);
    // The stream is listed on the run: realtime subscribers subscribe to it.
    const { rows } = await api.db.pool.query(`SELECT realtime_streams FROM runs WHERE id = $1`, [id]);
    expect(rows[0].realtime_streams).toEqual(["log"]);
  });

  it("delivers chunks appended while a reader waits, and ends the read once the run finishes", async () => {
    const { id } = await tasks.trigger("streams-task", {});
    await client.createStream(id, "self", "live");
    const reader = collect(await streams.read(id, "live", { timeoutInSeconds: 30 }));
    await expect.poll(() => api.deps.runStreams!.size, { timeout: 5000, interval: 10 }).toBeGreaterThanOrEqual(1);
    for (const n of [1, 2, 3]) await client.appendToStream(id, "self", "live", `chunk ${n}`);
    await runs.cancel(id);
    expect(await reader).toEqual(["chunk 1", "chunk 2", "chunk 3"]);
  });

  it("gives runs.subscribeToRun(id).withStreams() the run and every chunk of its streams", async () => {
    const { id, publicAccessToken } = await tasks.trigger("streams-task", {});
    await client.appendToStream(id, "self", "tokens", "first");
    const seen: string[] = [];
    await auth.withAuth({ accessToken: publicAccessToken }, async () => {
      for await (const part of runs.subscribeToRun(id).withStreams<{ tokens: string }>()) {
        if (part.type === "run") {
          seen.push(`run ${part.run.status}`);
          if (part.run.status === "CANCELED") break;
          continue;
        }
        seen.push(`${part.type}: ${String(part.chunk)}`);
        if (part.chunk === "first") {
          await client.appendToStream(id, "self", "tokens", "second");
        } else if (part.chunk === "second") {
          await auth.withAuth({ accessToken: api.project.environments.dev.secretKey }, () => runs.cancel(id));
        }
      }
    });
    expect(seen.filter((s) => s.startsWith("tokens"))).toEqual(["tokens: first", "tokens: second"]);
    // No worker ever registered the task: PENDING_VERSION until canceled.
    expect(seen.filter((s) => s.startsWith("run"))).toEqual(["run PENDING_VERSION", "run CANCELED"]);
  });

  it("appends to the parent's or the root's stream with target parent/root (the run itself when it has none)", async () => {
    const { id } = await tasks.trigger("streams-task", {});
    await client.appendToStream(id, "parent", "up", "p");
    await client.appendToStream(id, "root", "up", "r");
    expect(await collect(await streams.read(id, "up", { timeoutInSeconds: 1 }))).toEqual(["p", "r"]);
  });

  it("refuses bad input with a 4xx JSON error", async () => {
    const { id, publicAccessToken } = await tasks.trigger("streams-task", {});
    const url = (path: string) => `${api.baseURL}${path}`;
    const post = (path: string, body: string, headers: Record<string, string> = secretAuth()) => fetch(url(path), { method: "POST", headers: { "content-type": "text/plain", ...headers }, body });
    const expectError = async (response: Response, status: number, message?: RegExp) => {
      expect(response.status).toBe(status);
      const body = (await response.json()) as { error: string };
      expect(typeof body.error).toBe("string");
      if (message) expect(body.error).toMatch(message);
    };
    await expectError(await post(`/realtime/v1/streams/run_nope/self/log/append`, "x"), 404, /Run not found/);
    await expectError(await post(`/realtime/v1/streams/${id}/sideways/log/append`, "x"), 400);
    await expectError(await post(`/realtime/v1/streams/${id}/self/bad%2Fkey/append`, "x"), 400);
    await expectError(await post(`/realtime/v1/streams/${id}/self/log/append`, ""), 400, /empty/);
    await expectError(await post(`/realtime/v1/streams/${id}/self/log/append`, "x".repeat(MAX_STREAM_CHUNK_BYTES + 10)), 413);
    await expectError(await post(`/realtime/v1/streams/${id}/self/log/append`, "x", {}), 401);
    // A public token may read the run's streams, not write them.
    await expectError(await post(`/realtime/v1/streams/${id}/self/log/append`, "x", { authorization: `Bearer ${publicAccessToken}` }), 401);
    // Reading: unknown run, a token for another run, a bad Last-Event-ID.
    await expectError(await fetch(url(`/realtime/v1/streams/run_nope/log`), { headers: secretAuth() }), 404);
    const other = await tasks.trigger("streams-task", {});
    await expectError(await fetch(url(`/realtime/v1/streams/${id}/log`), { headers: { authorization: `Bearer ${other.publicAccessToken}` } }), 403);
    await expectError(await fetch(url(`/realtime/v1/streams/${id}/log`), { headers: { ...secretAuth(), "last-event-id": "abc" } }), 400);
    await expectError(await fetch(url(`/realtime/v1/streams/${id}/log`), { headers: { ...secretAuth(), "timeout-seconds": "0" } }), 400);
    // Input: unknown run, no token scope, an oversized value, a finished run.
    const json = (body: unknown, headers: Record<string, string> = secretAuth()) => ({ method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
    await expectError(await fetch(url(`/realtime/v1/streams/run_nope/input/answer`), json({ data: 1 })), 404);
    const readOnly = await auth.createPublicToken({ scopes: { read: { runs: [id] } } });
    await expectError(await fetch(url(`/realtime/v1/streams/${id}/input/answer`), json({ data: 1 }, { authorization: `Bearer ${readOnly}` })), 403, /write:inputStreams/);
    await expectError(await fetch(url(`/realtime/v1/streams/${id}/input/answer`), json({ data: "x".repeat(MAX_STREAM_CHUNK_BYTES) })), 413);
    await runs.cancel(other.id);
    await expectError(await fetch(url(`/realtime/v1/streams/${other.id}/input/answer`), json({ data: 1 })), 422, /finished/);
    await expectError(await fetch(url(`/api/v1/runs/${id}/input-streams/wait`), json({})), 400);
  });
});

describe("the caps", () => {
  it("refuses a chunk past a stream's cap and a stream past a run's, 413, storing nothing", async () => {
    const { id } = await tasks.trigger("streams-task", {});
    const append = (key: string) =>
      fetch(`${api.baseURL}/realtime/v1/streams/${id}/self/${key}/append`, { method: "POST", headers: { ...secretAuth(), "content-type": "text/plain" }, body: "x" });
    expect((await append("full")).status).toBe(200);
    // As if the stream held its cap already (not 100,000 appends in a test).
    await api.db.pool.query(`UPDATE run_streams SET last_seq = $2 WHERE run_id = $1 AND stream_key = 'full'`, [id, MAX_STREAM_CHUNKS]);
    const full = await append("full");
    expect(full.status).toBe(413);
    expect(((await full.json()) as { error: string }).error).toMatch(/at most 100000 chunks/);
    const { rows } = await api.db.pool.query(`SELECT count(*)::int AS n FROM run_stream_records WHERE run_id = $1 AND stream_key = 'full'`, [id]);
    expect(rows[0].n).toBe(1);
    for (let i = 1; i < MAX_STREAMS_PER_RUN; i++) expect((await append(`s${i}`)).status).toBe(200);
    const tooMany = await append("one-more");
    expect(tooMany.status).toBe(413);
    expect(((await tooMany.json()) as { error: string }).error).toMatch(/at most 50 realtime streams/);
    // An existing stream still takes chunks.
    expect((await append("s1")).status).toBe(200);
  });
});

describe("input streams from a backend", () => {
  it("sends with streams.input().send and the trigger's public token; a waitpoint made by createInputStreamWaitpoint completes with the next chunk", async () => {
    const { id, publicAccessToken } = await tasks.trigger("streams-task", {});
    const approval = streams.input<{ approved: boolean }>({ id: "approval" });
    const { waitpointId, isCached } = await client.createInputStreamWaitpoint(id, { streamId: "approval", timeout: "1h" });
    expect(isCached).toBe(false);
    await auth.withAuth({ accessToken: publicAccessToken }, () => approval.send(id, { approved: true }));
    const token = await client.retrieveWaitpointToken(waitpointId);
    expect(token.status).toBe("COMPLETED");
    // The token's output is the chunk's sequence number and value (as JSON, its outputType).
    expect(token.outputType).toBe("application/json");
    expect(JSON.parse(token.output as string)).toEqual({ seq: 1, data: { approved: true } });
    // A waitpoint made after the chunk landed, from the start of the stream, completes at once.
    const late = await client.createInputStreamWaitpoint(id, { streamId: "approval" });
    expect((await client.retrieveWaitpointToken(late.waitpointId)).status).toBe("COMPLETED");
    // … and one after the chunk's sequence number waits for the next.
    const next = await client.createInputStreamWaitpoint(id, { streamId: "approval", lastSeqNum: 1 });
    expect((await client.retrieveWaitpointToken(next.waitpointId)).status).toBe("WAITING");
  });
});
