// A run's streams through svc's own client (client.streams.append/read/sendInput, and the
// `streams.read` / `streams.input().send` task code and backends import from @svc/runtime),
// against the real API on a loopback port. A pass-through fetch stands in for the network
// failing mid-stream, to show a read resuming after its last chunk.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ApiClient, configure, NotFoundError, streams, tasksClient } from "@svc/runtime";
import { clearServiceEnvironment, NO_RETRY, startListeningApi, type ListeningApi } from "./client-server.ts";

let api: ListeningApi;
beforeAll(async () => {
  api = await startListeningApi();
});
afterAll(async () => api?.close());
beforeEach(() => {
  clearServiceEnvironment();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
});

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

describe("client.streams", () => {
  it("appends, reads in order from a chunk on, and streams.read reads the same", async () => {
    const client = new ApiClient({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
    const { id } = await tasksClient.trigger("client-streams", {});
    expect(await client.streams.append(id, "log", "one")).toEqual({ seq: 1 });
    expect(await client.streams.append(id, "log", "two")).toEqual({ seq: 2 });
    expect(await collect(client.streams.read(id, "log", { timeoutInSeconds: 1 }))).toEqual(["one", "two"]);
    expect(await collect(client.streams.read(id, "log", { timeoutInSeconds: 1, startIndex: 2 }))).toEqual(["two"]);
    expect(await collect(await streams.read(id, "log", { timeoutInSeconds: 1 }))).toEqual(["one", "two"]);
  });

  it("resumes a read after its last chunk when the connection drops mid-stream", async () => {
    const { id } = await tasksClient.trigger("client-streams", {});
    const writer = new ApiClient({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: NO_RETRY });
    for (const chunk of ["a", "b", "c"]) await writer.streams.append(id, "letters", chunk);
    const sent: (string | null)[] = [];
    const fetchOnce: typeof fetch = async (input, init) => {
      sent.push(new Headers(init?.headers).get("last-event-id"));
      if (sent.length > 1) return fetch(input, init);
      // The first connection delivers chunk 1 (as the server sends it), then the network fails.
      const body = JSON.stringify({ data: "a", id: "part-a" });
      const frame = `event: batch\nid: 1\ndata: ${JSON.stringify({ records: [{ seq_num: 1, timestamp: 0, headers: [], body }] })}\n\n`;
      let pulls = 0;
      const stream = new ReadableStream<Uint8Array>({
        // The error only once the frame was read (erroring a stream drops what it still holds).
        pull(controller) {
          if (pulls++ === 0) controller.enqueue(new TextEncoder().encode(frame));
          else controller.error(new TypeError("terminated"));
        },
      });
      return new Response(stream, { status: 200, headers: { "content-type": "text/event-stream", "x-stream-version": "v2" } });
    };
    const reader = new ApiClient({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { ...NO_RETRY, fetch: fetchOnce } });
    expect(await collect(reader.streams.read(id, "letters", { timeoutInSeconds: 1 }))).toEqual(["a", "b", "c"]);
    expect(sent).toEqual([null, "1"]);
  });

  it("sends to an input stream with streams.input().send; an unknown run is a NotFoundError", async () => {
    const { id } = await tasksClient.trigger("client-streams", {});
    await streams.input<{ n: number }>({ id: "answer" }).send(id, { n: 1 });
    const { rows } = await api.db.pool.query(`SELECT seq, data FROM run_stream_records WHERE run_id = $1 AND io = 'in'`, [id]);
    expect(rows.map((r) => ({ seq: Number(r.seq), data: r.data }))).toEqual([{ seq: 1, data: '{"n":1}' }]);
    await expect(streams.input({ id: "answer" }).send("run_nope", 1)).rejects.toBeInstanceOf(NotFoundError);
  });
});
