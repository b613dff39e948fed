// logger.* and tags.add in a run on a real worker: log lines carry their run, attempt and task and
// go through the worker's task log sink (pino in production), lines a resumed run logs again while
// replaying are marked, svc's replay notices are said once per worker; tags.add adds tags to the
// run (and to the run list's tag index) once however often it is replayed. Also what a trigger
// from inside a run sends, and the notice it gets outside a step.
import { createServer, type Server } from "node:http";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { logger, step, tags, task, tasks, wait, withAuth } from "@svc/runtime";
import { pinoTaskLogs } from "../src/execution/task-logs.ts";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";
import { collectTaskLogs } from "./task-logs.ts";

let te: TestEngine;
let tw: TestWorker;
const logs = collectTaskLogs();

const chatty = task({
  id: "chatty",
  run: async (payload: { token: string }, { ctx }) => {
    logger.info("before the wait", { order: 7 });
    logger.debug("details");
    await wait.forToken(payload.token);
    logger.warn("after the wait", { attempt: ctx.attempt.number });
    logger.log("done");
    logger.error("an error line");
    return "ok";
  },
});

const tagger = task({
  id: "tagger",
  retry: { maxAttempts: 1 },
  run: async (payload: { add: string[]; token?: string }, { ctx }) => {
    await tags.add(payload.add);
    if (payload.token) await wait.forToken(payload.token);
    return ctx.run.tags;
  },
});

/** An API stand-in that answers triggers and keeps what it was sent (no database is involved). */
const triggerBodies: { path: string; body: { options?: Record<string, unknown> } }[] = [];
let api: Server;
let apiUrl: string;
const triggers = task({
  id: "triggers-from-run",
  run: async (payload: { how: "step" | "keyed" | "bare" }) => {
    const send = () => withAuth({ baseURL: apiUrl, secretKey: "svc_dev_test" }, () => tasks.trigger("some-task", { n: 1 }, payload.how === "keyed" ? { idempotencyKey: "k1" } : undefined));
    const handle = payload.how === "step" ? await step.run("trigger", send) : await send();
    return handle.id;
  },
});

beforeAll(async () => {
  api = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      triggerBodies.push({ path: req.url ?? "", body: JSON.parse(body || "{}") });
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ id: `run_fake${triggerBodies.length}` }));
    });
  });
  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
  apiUrl = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
  te = await startTestEngine();
  tw = await startTestWorker(te, [chatty, tagger, triggers], { taskLogs: logs });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
  await new Promise((resolve) => api?.close(resolve));
});

const complete = (tokenId: string) => withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, {}));
const newToken = async () => (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
const finished = (id: string) => tw.worker.events.next("runFinished", (e) => e.runId === id);

describe("logger", () => {
  it("writes each line with its run, attempt and task; lines logged again on replay are marked replayed", async () => {
    const token = await newToken();
    const suspended = tw.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "chatty", { token });
    await suspended;
    const done = finished(id);
    await complete(token);
    expect((await done).status).toBe("COMPLETED");
    const lines = logs.of(id).map((r) => ({ level: r.level, message: r.message, attributes: r.attributes, replayed: r.replayed ?? false }));
    expect(lines).toEqual([
      { level: "info", message: "before the wait", attributes: { order: 7 }, replayed: false },
      { level: "debug", message: "details", attributes: undefined, replayed: false },
      { level: "info", message: "before the wait", attributes: { order: 7 }, replayed: true },
      { level: "debug", message: "details", attributes: undefined, replayed: true },
      { level: "warn", message: "after the wait", attributes: { attempt: 1 }, replayed: false },
      { level: "log", message: "done", attributes: undefined, replayed: false },
      { level: "error", message: "an error line", attributes: undefined, replayed: false },
    ]);
    for (const record of logs.of(id)) {
      expect(record.run).toEqual({ id, attempt: 1, taskId: "chatty" });
      expect(record.at).toBeInstanceOf(Date);
    }
    expect(logs.notices().filter((n) => n === "replayed-logs")).toEqual(["replayed-logs"]);
  });

  it("as pino lines in the worker's log: run id, attempt, task and attributes; replayed lines at debug", () => {
    const lines: Record<string, unknown>[] = [];
    const out = new Writable({ write: (chunk: Buffer, _encoding, callback) => (lines.push(JSON.parse(chunk.toString())), callback()) });
    const sink = pinoTaskLogs(pino({ level: "debug", base: { service: "svc-worker" } }, out));
    const run = { id: "run_abc", attempt: 2, taskId: "chatty" };
    sink.write({ level: "log", message: "hello", attributes: { n: 1 }, at: new Date(), run });
    sink.write({ level: "error", message: "failed", attributes: { error: Object.assign(new TypeError("bad"), { stack: "TypeError: bad\n    at x" }), n: 2 }, at: new Date(), run });
    sink.write({ level: "error", message: "again", at: new Date(), run, replayed: true });
    sink.write({ level: "warn", message: "svc: a notice", at: new Date(), run, notice: "replayed-logs" });
    expect(lines.map(({ time: _time, pid: _pid, hostname: _host, ...rest }) => rest)).toEqual([
      { level: 30, service: "svc-worker", runId: "run_abc", attempt: 2, task: "chatty", attributes: { n: 1 }, msg: "hello" },
      { level: 50, service: "svc-worker", runId: "run_abc", attempt: 2, task: "chatty", attributes: { error: { name: "TypeError", message: "bad", stack: "TypeError: bad\n    at x" }, n: 2 }, msg: "failed" },
      { level: 20, service: "svc-worker", runId: "run_abc", attempt: 2, task: "chatty", replayed: true, msg: "again" },
      { level: 40, service: "svc-worker", runId: "run_abc", attempt: 2, task: "chatty", notice: "replayed-logs", msg: "svc: a notice" },
    ]);
  });

  it("outside a run, writes to the console", () => {
    const info = vi.spyOn(console, "info").mockImplementation(() => {});
    try {
      logger.info("from a script", { a: 1 });
      expect(info).toHaveBeenCalledWith("from a script", { a: 1 });
    } finally {
      info.mockRestore();
    }
  });
});

describe("tags.add", () => {
  it("adds tags to the run and to the run list's tag index; ctx.run.tags has them", async () => {
    const { id } = await triggerRun(te.engine, te.env, "tagger", { add: ["user:42", "eu", "first"] }, { tags: ["first"] });
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toEqual(["first", "user:42", "eu"]);
    expect((await getRunRow(te, id)).tags).toEqual(["first", "user:42", "eu"]);
    const { rows } = await te.db.pool.query<{ tag: string }>(`SELECT tag FROM run_tags WHERE run_id = $1 ORDER BY tag`, [id]);
    expect(rows.map((r) => r.tag)).toEqual(["eu", "first", "user:42"]);
  });

  it("adds nothing twice when a resumed run replays it", async () => {
    const token = await newToken();
    const suspended = tw.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "tagger", { add: ["a", "b"], token });
    await suspended;
    const done = finished(id);
    await complete(token);
    expect((await done).status).toBe("COMPLETED");
    expect((await getRunRow(te, id)).tags).toEqual(["a", "b"]);
    const { rows } = await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM run_tags WHERE run_id = $1`, [id]);
    expect(rows[0]!.n).toBe(2);
  });

  it("past 10 tags changes nothing and logs an error (as Trigger.dev)", async () => {
    const start = Array.from({ length: 9 }, (_, i) => `t${i}`);
    const { id } = await triggerRun(te.engine, te.env, "tagger", { add: ["x", "y"] }, { tags: start });
    expect((await finished(id)).status).toBe("COMPLETED");
    expect((await getRunRow(te, id)).tags).toEqual(start);
    expect(logs.of(id).map((r) => [r.level, r.message, r.attributes])).toEqual([["error", "Runs can only have 10 tags, you're trying to set 11.", { existingTags: start, newTags: ["x", "y"] }]]);
  });

  it("refuses bad tags and calls outside a run", async () => {
    const { id } = await triggerRun(te.engine, te.env, "tagger", { add: ["x".repeat(129)] });
    expect((await finished(id)).status).toBe("FAILED");
    expect((await getRunRow(te, id)).error).toMatchObject({ message: expect.stringContaining("each tag must be at most 128 characters") });
    await expect(tags.add("x")).rejects.toThrow(/tags\.add\(\) can only be called inside a task run/);
  });
});

describe("a trigger from inside a run", () => {
  it("sends its parent; outside a step and without an idempotencyKey it is told, once, that a replay triggers again", async () => {
    for (const how of ["step", "keyed"] as const) {
      const { id } = await triggerRun(te.engine, te.env, "triggers-from-run", { how });
      expect((await finished(id)).status).toBe("COMPLETED");
      expect(triggerBodies.at(-1)).toMatchObject({ path: "/api/v1/tasks/some-task/trigger", body: { options: { parentRunId: id } } });
    }
    expect(logs.notices()).not.toContain("trigger-outside-step");
    for (let i = 0; i < 2; i++) {
      const { id } = await triggerRun(te.engine, te.env, "triggers-from-run", { how: "bare" });
      expect((await finished(id)).status).toBe("COMPLETED");
    }
    expect(logs.notices().filter((n) => n === "trigger-outside-step")).toEqual(["trigger-outside-step"]);
  });
});
