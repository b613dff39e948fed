// The argument reading of task code's streams.* (Trigger.dev's overloads) and what writer() and
// define() hand to the run's streams: against an execution that records the calls (the worker's
// RunStreams, and what Postgres makes of them, are test/scenario-run-streams.test.ts's).
import { describe, expect, it } from "vitest";
import { ReplayNotices } from "./replay-notices.ts";
import { runInExecution, type RunExecution, type RunStreamAccess, type StreamTarget } from "./run-context.ts";
import { streams } from "./streams.ts";
import type { TaskLogRecord } from "./task-logs.ts";

function recordingExecution() {
  const appended: { key: string; target: StreamTarget; values: unknown[] }[] = [];
  const logs: TaskLogRecord[] = [];
  const pipes: Promise<void>[] = [];
  const sink = { write: (record: TaskLogRecord) => void logs.push(record) };
  const access: RunStreamAccess = {
    append: async (key, target, values) => void appended.push({ key, target, values }),
    track: (_key, done) => void pipes.push(done),
    waitForInput: async () => ({ ok: true, output: null }),
    onceInput: async () => ({ ok: true, output: null }),
    onInput: () => ({ off: () => {} }),
    peekInput: (key) => (key === "msgs" ? { text: "hi" } : undefined),
  };
  const execution = {
    ctx: { run: { id: "run_unit" }, attempt: { number: 1 }, task: { id: "unit" } },
    streams: access,
    logs: sink,
    notices: new ReplayNotices(sink, { now: () => new Date(0) } as never),
    now: () => new Date(0),
  } as unknown as RunExecution;
  return { execution, appended, logs, pipes };
}

const run = <T>(execution: RunExecution, fn: () => Promise<T>) => runInExecution(execution, fn);

describe("streams.append", () => {
  it("reads its arguments as Trigger.dev does: a key needs a value after it that is not options", async () => {
    const { execution, appended } = recordingExecution();
    await run(execution, async () => {
      await streams.append("log", "line");
      await streams.append("just a value");
      await streams.append({ n: 1 });
      await streams.append("to the parent", { target: "parent" });
      await streams.append("progress", { n: 2 }, { target: "root" });
      await streams.append({ n: 3 }, { requestOptions: {} });
    });
    expect(appended).toEqual([
      { key: "log", target: "self", values: ["line"] },
      { key: "default", target: "self", values: ["just a value"] },
      { key: "default", target: "self", values: [{ n: 1 }] },
      { key: "default", target: "parent", values: ["to the parent"] },
      { key: "progress", target: "root", values: [{ n: 2 }] },
      { key: "default", target: "self", values: [{ n: 3 }] },
    ]);
  });
});

describe("streams.writer and streams.define", () => {
  it("writes what execute writes and merges, in order, then ends; waitUntilComplete resolves to {}", async () => {
    const { execution, appended } = recordingExecution();
    const result = await run(execution, async () => {
      const { stream, waitUntilComplete } = streams.writer<string>("w", {
        execute: async ({ write, merge }) => {
          write("a");
          merge(ReadableStream.from(["m1", "m2"]));
          await new Promise((resolve) => setTimeout(resolve, 5));
          write("z");
        },
      });
      const seen: string[] = [];
      for await (const part of stream) seen.push(part);
      return { seen, complete: await waitUntilComplete() };
    });
    expect(result).toEqual({ seen: ["a", "m1", "m2", "z"], complete: {} });
    expect(appended.flatMap((a) => a.values)).toEqual(["a", "m1", "m2", "z"]);
    expect(new Set(appended.map((a) => `${a.target}:${a.key}`))).toEqual(new Set(["self:w"]));
  });

  it("ends the stream at an error execute throws, and says so in the run's log", async () => {
    const { execution, appended, logs } = recordingExecution();
    await run(execution, async () => {
      const { waitUntilComplete } = streams.writer({
        execute: async ({ write }) => {
          write("before");
          throw new Error("boom");
        },
      });
      await waitUntilComplete();
    });
    expect(appended.flatMap((a) => a.values)).toEqual(["before"]);
    expect(logs.filter((l) => l.level === "error").map((l) => l.message)).toEqual(['streams.writer("default"): execute failed: boom']);
  });

  it("a defined stream appends, pipes and writes to its own key, with the target asked for", async () => {
    const { execution, appended } = recordingExecution();
    const progress = streams.define<{ p: number }>({ id: "progress" });
    expect(progress.id).toBe("progress");
    await run(execution, async () => {
      await progress.append({ p: 1 }, { target: "parent" });
      await progress.pipe(ReadableStream.from([{ p: 2 }])).waitUntilComplete();
      await progress.writer({ execute: ({ write }) => write({ p: 3 }) }).waitUntilComplete();
    });
    expect(appended).toEqual([
      { key: "progress", target: "parent", values: [{ p: 1 }] },
      { key: "progress", target: "self", values: [{ p: 2 }] },
      { key: "progress", target: "self", values: [{ p: 3 }] },
    ]);
  });

  it("refuses writer options without execute, and writer/append outside a run", async () => {
    const { execution } = recordingExecution();
    await run(execution, async () => expect(() => streams.writer("k", {} as never)).toThrow(/execute function/));
    expect(() => streams.writer({ execute: () => {} })).toThrow(/can only be called inside a task run/);
    await expect(streams.define({ id: "x" }).append(1)).rejects.toThrow(/can only be called inside a task run/);
  });
});

describe("input streams' peek", () => {
  it("answers what the run's streams have loaded, at once, and says the replay notice once", async () => {
    const { execution, logs } = recordingExecution();
    const seen = await run(execution, async () => [streams.input({ id: "msgs" }).peek(), streams.input({ id: "other" }).peek(), streams.input({ id: "msgs" }).peek()]);
    expect(seen).toEqual([{ text: "hi" }, undefined, { text: "hi" }]);
    expect(logs.filter((l) => l.notice).map((l) => l.notice)).toEqual(["input-peek-live"]);
  });
});
