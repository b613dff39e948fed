import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, configure, runs, streams as sdkStreams, tasks } from "@trigger.dev/sdk";
import { ApiClient } from "@trigger.dev/core/v3";
import { metadata, streams, task, type InputStream } from "../packages/runtime/src/sdk/index.ts";
import { startTestWorker, type TestWorker } from "../packages/worker/test/harness.ts";
import { collectTaskLogs } from "../packages/worker/test/task-logs.ts";
import { configure as configureSvc } from "../packages/runtime/src/index.ts";
import { startListeningApi, type ListeningApi } from "../packages/api/test/client-server.ts";

// End to end across packages: a real worker runs task code that writes realtime streams
// (`streams.pipe`, `streams.append`, `streams.writer`, a `streams.define` stream, `metadata.stream`)
// and reads input streams (`.wait()`, `.once()`, `.on()`, `.peek()`); the published SDK reads the
// streams (`runs.subscribeToRun().withStreams()`, `streams.read`, its own `streams.define().read`,
// fetchStream resuming after a chunk) and sends input (`streams.input().send`).
let api: ListeningApi;
let tw: TestWorker;
let client: ApiClient;

/** Chunks the test lets through one at a time: each is piped only once the test says so. */
const gates = new Map<string, (() => void)[]>();
function gate(runId: string, n: number): Promise<void> {
  return new Promise((resolve) => {
    const list = gates.get(runId) ?? [];
    list[n] = resolve;
    gates.set(runId, list);
  });
}
function open(runId: string, n: number): boolean {
  const resolve = gates.get(runId)?.[n];
  resolve?.();
  return resolve !== undefined;
}

const piper = task({
  id: "streams-piper",
  run: async (payload: { n: number }, { ctx }) => {
    async function* tokens() {
      for (let i = 0; i < payload.n; i++) {
        await gate(ctx.run.id, i);
        yield { i, text: `token ${i}` };
      }
    }
    const { stream } = streams.pipe("tokens", tokens());
    let seen = 0;
    for await (const _ of stream) seen++;
    return { seen };
  },
});

const approver = task({
  id: "streams-approver",
  run: async (_payload: unknown) => {
    await streams.append("log", "before the wait");
    const answer = await streams.input<{ approved: boolean }>({ id: "approval" }).wait({ timeout: "1h" });
    await streams.append("log", "after the wait");
    const second = await streams.input<{ approved: boolean }>({ id: "approval" }).wait({ timeout: "1h" });
    return { first: answer.unwrap(), second: second.unwrap() };
  },
});

const quick = task({ id: "streams-quick", run: async () => ({ quick: true }) });

const onceTask = task({
  id: "streams-once",
  run: async () => {
    const reply = await streams.input<string>({ id: "reply" }).once({ timeoutMs: 30_000 });
    const late = await streams.input<string>({ id: "reply" }).once({ timeoutMs: 10 });
    const piped = await metadata.stream("echo", (async function* () { yield reply.unwrap(); })());
    const back: string[] = [];
    for await (const value of piped) back.push(value);
    return { reply: reply.unwrap(), lateOk: late.ok, back };
  },
});

const twoPipes = task({
  id: "streams-two-pipes",
  run: async () => {
    async function* count(prefix: string) {
      for (let i = 0; i < 20; i++) yield `${prefix}${i}`;
    }
    const a = streams.pipe("a", count("a"));
    const b = streams.pipe("b", count("b"), { target: "root" });
    await Promise.all([a.waitUntilComplete(), b.waitUntilComplete()]);
    return { ok: true };
  },
});

const listener = task({
  id: "streams-listener",
  run: async () => {
    const got: string[] = [];
    await new Promise<void>((resolve) => {
      streams.input<string>({ id: "msgs" }).on((value) => {
        got.push(value);
        if (got.length === 2) resolve();
      });
    });
    return { got };
  },
});

/** The typed stream both the task and the published SDK's reader use. */
const progress = streams.define<{ step: string }>({ id: "progress" });

const writerTask = task({
  id: "streams-writer",
  run: async () => {
    // Before a wait: the replay after it writes all of these again, and none is stored twice.
    const written = streams.writer<string>("lines", {
      execute: async ({ write, merge }) => {
        write("first");
        merge(ReadableStream.from(["merged 1", "merged 2"]));
        await Promise.resolve();
        write("last");
      },
    });
    const echoed: string[] = [];
    for await (const line of written.stream) echoed.push(line);
    const complete = await written.waitUntilComplete();
    await progress.append({ step: "appended" });
    await progress.pipe((async function* () { yield { step: "piped" }; })()).waitUntilComplete();
    await progress.writer({ execute: ({ write }) => write({ step: "written" }) }).waitUntilComplete();
    await streams.append("no key given"); // the "default" stream, as Trigger.dev's one-argument append
    const go = await streams.input<string>({ id: "go" }).wait({ timeout: "1h" });
    await progress.append({ step: `after the wait: ${go.unwrap()}` });
    return { echoed: echoed.sort(), complete };
  },
});

/** Polls `peek()` until it shows a value (a peek never blocks; the first one starts watching). */
async function peekSoon<T>(input: InputStream<T>): Promise<T> {
  for (let i = 0; i < 2_000; i++) {
    const value = input.peek();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error("peek() showed nothing");
}

/** Said by the peeker once it has peeked at an empty stream. */
let peekedEmpty: (() => void) | null = null;

const peeker = task({
  id: "streams-peeker",
  run: async () => {
    const msgs = streams.input<string>({ id: "msgs" });
    const empty = msgs.peek();
    peekedEmpty?.();
    const seen = await peekSoon(msgs);
    const first = (await msgs.once({ timeoutMs: 10_000 })).unwrap();
    // The peek moves on to the next value once the code received the one it showed.
    const next = await peekSoon(msgs);
    const second = (await msgs.wait({ timeout: "1h" })).unwrap();
    // Checkpointed until a third value is sent; the replay after it runs all of the above again.
    const third = (await msgs.wait({ timeout: "1h" })).unwrap();
    return { empty: empty ?? null, seen, first, next, second, third };
  },
});

const logs = collectTaskLogs();

beforeAll(async () => {
  api = await startListeningApi();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  // svc's own client (a defined stream's read from svc's SDK).
  configureSvc({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey });
  client = new ApiClient(api.baseURL, api.project.environments.dev.secretKey, undefined, { retry: { maxAttempts: 1 } });
  // One slot: a run waiting in input.wait() must give it back for another run to start.
  tw = await startTestWorker(api, [piper, approver, quick, onceTask, listener, twoPipes, writerTask, peeker], { concurrency: 1, taskLogs: logs });
});
afterAll(async () => {
  await tw?.stop();
  await api?.close();
});

async function statusOf(runId: string): Promise<string> {
  const { rows } = await api.db.pool.query<{ status: string }>(`SELECT status FROM runs WHERE id = $1`, [runId]);
  return rows[0]!.status;
}

describe("task code writes realtime streams", () => {
  it("pipes an async iterable: withStreams() gets every chunk in order, live, and streams.read / fetchStream resume after a chunk", async () => {
    const handle = await tasks.trigger("streams-piper", { n: 5 });
    const chunks: unknown[] = [];
    let finished = false;
    await auth.withAuth({ accessToken: handle.publicAccessToken }, async () => {
      for await (const part of runs.subscribeToRun(handle.id).withStreams<{ tokens: { i: number; text: string } }>()) {
        if (part.type === "run") {
          // The first chunk is let through once the run executes; each next one once the previous arrived.
          if (part.run.status === "EXECUTING" && chunks.length === 0) await expect.poll(() => open(handle.id, 0), { timeout: 10_000, interval: 20 }).toBe(true);
          if (part.run.finishedAt) {
            finished = true;
            expect(part.run.output).toEqual({ seen: 5 });
            if (chunks.length === 5) break;
          }
          continue;
        }
        chunks.push(part.chunk);
        if (chunks.length < 5) await expect.poll(() => open(handle.id, chunks.length), { timeout: 10_000, interval: 20 }).toBe(true);
        if (chunks.length === 5 && finished) break;
      }
    });
    expect(chunks).toEqual([0, 1, 2, 3, 4].map((i) => ({ i, text: `token ${i}` })));
    // After the run: the whole stream at once (it ends by itself: the run has finished).
    expect(await collect(await sdkStreams.read(handle.id, "tokens"))).toHaveLength(5);
    // A reader that reconnects after chunk 3 gets 4 and 5 only.
    const resumed: string[] = [];
    const rest = await client.fetchStream(handle.id, "tokens", { lastEventId: "3", onPart: (part) => resumed.push(part.id) });
    expect(await collect(rest)).toEqual([{ i: 3, text: "token 3" }, { i: 4, text: "token 4" }]);
    expect(resumed).toEqual(["4", "5"]);
  });
});

describe("two streams piped at once", () => {
  it("stores both, each in order (the run is its own root)", async () => {
    const handle = await tasks.trigger("streams-two-pipes", {});
    expect((await tw.worker.events.next("runFinished", (e) => e.runId === handle.id)).status).toBe("COMPLETED");
    const expected = (p: string) => Array.from({ length: 20 }, (_, i) => `${p}${i}`);
    expect(await collect(await sdkStreams.read(handle.id, "a"))).toEqual(expected("a"));
    expect(await collect(await sdkStreams.read(handle.id, "b"))).toEqual(expected("b"));
  });
});

describe("task code reads input streams", () => {
  it("input.wait() checkpoints the run, freeing its slot; streams.input().send resumes it, and the replay stores no chunk twice", async () => {
    const handle = await tasks.trigger("streams-approver", {});
    await tw.worker.events.next("runSuspended", (e) => e.runId === handle.id);
    expect(await statusOf(handle.id)).toBe("WAITING");
    // The slot is given back as the execution ends, just after the suspension is announced.
    await expect.poll(() => tw.worker.slotsInUse(), { timeout: 5_000, interval: 10 }).toBe(0);
    // The worker's one slot is free: another run starts and ends while this one waits.
    const other = await tasks.trigger("streams-quick", {});
    await tw.worker.events.next("runFinished", (e) => e.runId === other.id);
    // Sent with the trigger's public token (it carries write:inputStreams:<run>).
    const approval = sdkStreams.input<{ approved: boolean }>({ id: "approval" });
    const resumedAndWaiting = tw.worker.events.next("runSuspended", (e) => e.runId === handle.id);
    await auth.withAuth({ accessToken: handle.publicAccessToken! }, () => approval.send(handle.id, { approved: true }));
    await resumedAndWaiting;
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === handle.id);
    await approval.send(handle.id, { approved: false });
    expect((await finished).status).toBe("COMPLETED");
    expect((await runs.retrieve(handle.id)).output).toEqual({ first: { approved: true }, second: { approved: false } });
    // The code before each wait ran again on each resume: "before the wait" is stored once.
    expect(await collect(await sdkStreams.read(handle.id, "log"))).toEqual(["before the wait", "after the wait"]);
  });

  it("input.once() keeps the slot and gets a value sent while it waits; a second once() times out", async () => {
    const handle = await tasks.trigger("streams-once", {});
    await expect.poll(() => statusOf(handle.id), { timeout: 10_000, interval: 20 }).toBe("EXECUTING");
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === handle.id);
    await sdkStreams.input<string>({ id: "reply" }).send(handle.id, "hello");
    expect((await finished).status).toBe("COMPLETED");
    expect((await runs.retrieve(handle.id)).output).toEqual({ reply: "hello", lateOk: false, back: ["hello"] });
    expect(await collect(await sdkStreams.read(handle.id, "echo"))).toEqual(["hello"]);
  });
});

describe("input.on()", () => {
  it("calls the handler with every value sent, in order, while the run executes", async () => {
    const handle = await tasks.trigger("streams-listener", {});
    await sdkStreams.input<string>({ id: "msgs" }).send(handle.id, "sent before the handler");
    await expect.poll(() => statusOf(handle.id), { timeout: 10_000, interval: 20 }).toBe("EXECUTING");
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === handle.id);
    await sdkStreams.input<string>({ id: "msgs" }).send(handle.id, "sent while it listens");
    expect((await finished).status).toBe("COMPLETED");
    expect((await runs.retrieve(handle.id)).output).toEqual({ got: ["sent before the handler", "sent while it listens"] });
  });
});

describe("streams.writer() and streams.define()", () => {
  it("writes and merges chunks, a defined stream appends, pipes and writes, and the replay after a wait stores none twice; the published SDK reads them", async () => {
    const handle = await tasks.trigger("streams-writer", {});
    await tw.worker.events.next("runSuspended", (e) => e.runId === handle.id);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === handle.id);
    await sdkStreams.input<string>({ id: "go" }).send(handle.id, "go");
    expect((await finished).status).toBe("COMPLETED");
    expect((await runs.retrieve(handle.id)).output).toEqual({ echoed: ["first", "last", "merged 1", "merged 2"].sort(), complete: {} });
    // Each chunk once, though the code before the wait ran twice (merged ones come as they arrive).
    const lines = await collect(await sdkStreams.read<string>(handle.id, "lines"));
    expect([...lines].sort()).toEqual(["first", "last", "merged 1", "merged 2"].sort());
    expect(lines[0]).toBe("first");
    // The published SDK's own defined stream reads the same key (its read is fetchStream).
    const sdkProgress = sdkStreams.define<{ step: string }>({ id: "progress" });
    const steps = ["appended", "piped", "written", "after the wait: go"];
    expect((await collect(await sdkProgress.read(handle.id))).map((c) => c.step)).toEqual(steps);
    expect((await collect(await sdkProgress.read(handle.id, { startIndex: 4 }))).map((c) => c.step)).toEqual(steps.slice(3));
    // svc's own defined stream reads over svc's client.
    expect((await collect(await progress.read(handle.id))).map((c) => c.step)).toEqual(steps);
    expect(await collect(await sdkStreams.read(handle.id))).toEqual(["no key given"]);
    expect(logs.notices().filter((n) => n === "writer-merge-order")).toEqual(["writer-merge-order"]);
  });
});

describe("input.peek()", () => {
  it("shows the value the next once()/wait() returns without taking it, moves on after each, and a replay after a wait sees the same", async () => {
    const peeked = new Promise<void>((resolve) => (peekedEmpty = resolve));
    const handle = await tasks.trigger("streams-peeker", {});
    await peeked;
    const msgs = sdkStreams.input<string>({ id: "msgs" });
    const suspended = tw.worker.events.next("runSuspended", (e) => e.runId === handle.id);
    await msgs.send(handle.id, "one");
    await msgs.send(handle.id, "two");
    await suspended;
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === handle.id);
    await msgs.send(handle.id, "three");
    expect((await finished).status).toBe("COMPLETED");
    // The replay peeked an empty stream no more: "one" was there by then; the rest is as before.
    const output = (await runs.retrieve(handle.id)).output as Record<string, unknown>;
    expect(output).toMatchObject({ seen: "one", first: "one", next: "two", second: "two", third: "three" });
    expect(["one", null]).toContain(output.empty);
    expect(logs.notices().filter((n) => n === "input-peek-live")).toEqual(["input-peek-live"]);
  });
});

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) out.push(item);
  return out;
}
