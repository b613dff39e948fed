// Lifecycle hooks (Trigger.dev v4's) under the replay model, on a real worker: the order they run
// in, what a resume runs again (init, middleware) and what it does not (onStart, onStartAttempt,
// each wait's onResume: recorded in the ledger), cleanup at a suspension, catchError's say over
// retries, onCancel, the waits onWait/onResume describe, global hooks, locals, and the notices.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { cancelRun, completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { AbortTaskRunError, locals, task, tasks, wait } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";
import { collectTaskLogs } from "./task-logs.ts";

let te: TestEngine;
let tw: TestWorker;
const logs = collectTaskLogs();
const calls = new Map<string, string[]>();
const called = (ctx: { run: { id: string } }, what: string) => void calls.set(ctx.run.id, [...(calls.get(ctx.run.id) ?? []), what]);
const callsOf = (id: string) => calls.get(id) ?? [];
const Greeting = locals.create<string>("greeting");

// \`run\` first: TypeScript infers the payload type from it before it types the hooks (as with Trigger.dev's task()).
const hooked = task({
  id: "hooked",
  run: async (payload: { token?: string }, { ctx, init }) => {
    called(ctx, `run:${init?.client}:${locals.get(Greeting)}`);
    if (payload.token) called(ctx, `waited:${(await wait.forToken<{ n: number }>(payload.token)).ok}`);
    return { done: true };
  },
  middleware: async ({ ctx, next }) => {
    called(ctx, "middleware:before");
    locals.set(Greeting, `hello ${ctx.run.id.slice(0, 4)}`);
    await next();
    called(ctx, "middleware:after");
  },
  init: async ({ ctx }) => {
    called(ctx, "init");
    return { client: "db" };
  },
  onStart: async ({ ctx, init }) => called(ctx, `onStart:${init?.client}`),
  onStartAttempt: ({ ctx }) => called(ctx, `onStartAttempt:${ctx.attempt.number}`),
  onWait: ({ ctx, wait }) => called(ctx, `onWait:${wait.type}`),
  onResume: ({ ctx, wait }) => called(ctx, `onResume:${wait.type}`),
  onSuccess: ({ ctx, output }) => called(ctx, `onSuccess:${JSON.stringify(output)}`),
  onFailure: ({ ctx }) => called(ctx, "onFailure"),
  onComplete: ({ ctx, result }) => called(ctx, `onComplete:${result.ok}`),
  cleanup: ({ ctx, init }) => called(ctx, `cleanup:${init?.client}`),
});

const flaky = task({
  id: "flaky-hooked",
  retry: { maxAttempts: 2, minTimeoutInMs: 10, randomize: false },
  onStart: ({ ctx }) => called(ctx, "onStart"),
  onStartAttempt: ({ ctx }) => called(ctx, `onStartAttempt:${ctx.attempt.number}`),
  catchError: ({ ctx, retryAt, retry, error }) => void called(ctx, `catchError:${(error as Error).message}:${retryAt instanceof Date}:${retry?.maxAttempts}`),
  onFailure: ({ ctx }) => called(ctx, "onFailure"),
  onSuccess: ({ ctx }) => called(ctx, "onSuccess"),
  run: async (_payload: unknown, { ctx }) => {
    if (ctx.attempt.number === 1) throw new Error("first attempt fails");
    return ctx.attempt.number;
  },
});

type CatchMode = "skip" | "delay" | "replace" | "options" | "abort" | "default";
const caught = task({
  id: "caught",
  retry: { maxAttempts: 3, minTimeoutInMs: 60_000, randomize: false },
  catchError: ({ ctx, payload }) => {
    called(ctx, "catchError");
    const mode = (payload as { mode: CatchMode }).mode;
    if (mode === "skip") return { skipRetrying: true };
    if (mode === "delay") return { retryDelayInMs: 5 * 60_000 };
    if (mode === "replace") return { error: new Error("replaced by catchError") };
    if (mode === "options") return { retry: { maxAttempts: 1 } };
    return undefined;
  },
  onFailure: ({ ctx, error }) => called(ctx, `onFailure:${(error as Error).message}`),
  onComplete: ({ ctx, result }) => called(ctx, `onComplete:${result.ok}`),
  run: async (payload: { mode: CatchMode }) => {
    if (payload.mode === "abort") throw new AbortTaskRunError("no point retrying");
    throw new Error("run failed");
  },
});

const child = task({ id: "hooks-child", run: async (payload: { n: number }) => payload.n * 2 });
const waitsForAll = task({
  id: "waits-for-all",
  onWait: ({ ctx, wait }) => called(ctx, `onWait:${JSON.stringify(wait)}`),
  onResume: ({ ctx, wait }) => called(ctx, `onResume:${wait.type}`),
  run: async () => {
    const one = await child.triggerAndWait({ n: 1 }).unwrap();
    const { runs } = await child.batchTriggerAndWait([{ payload: { n: 2 } }, { payload: { n: 3 } }]);
    await wait.for({ seconds: 0 });
    return [one, ...runs.map((r) => (r.ok ? r.output : null))];
  },
});

const cancellable = task({
  id: "cancellable-hooked",
  onCancel: async ({ ctx, runPromise }) => called(ctx, `onCancel:${runPromise instanceof Promise}`),
  cleanup: ({ ctx }) => called(ctx, "cleanup"),
  run: async (_payload: unknown, { ctx }) => {
    called(ctx, "run");
    await new Promise(() => {});
  },
});

const abandoned = task({
  id: "abandoned-hooked",
  onCancel: ({ ctx }) => called(ctx, "onCancel"),
  cleanup: ({ ctx }) => called(ctx, "cleanup"),
  run: async (_payload: unknown, { ctx }) => {
    called(ctx, "run");
    await new Promise(() => {});
  },
});

const plain = task({ id: "plain-hooked", onStart: ({ ctx }) => called(ctx, "task onStart"), run: async (_p: unknown, { ctx }) => (called(ctx, "run"), "plain") });

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [hooked, flaky, caught, child, waitsForAll, cancellable, plain], { taskLogs: logs });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

const complete = (tokenId: string, output: unknown) => withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, output));
const newToken = async () => (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
const finished = (id: string) => tw.worker.events.next("runFinished", (e) => e.runId === id);
async function ledger(runId: string) {
  const { rows } = await te.db.pool.query<{ epoch: number; step_key: string; kind: string }>(`SELECT epoch, step_key, kind FROM run_ledger WHERE run_id = $1 ORDER BY epoch, step_key`, [runId]);
  return rows;
}

describe("lifecycle hooks", () => {
  it("run in Trigger.dev's order around a run that does not wait", async () => {
    const { id } = await triggerRun(te.engine, te.env, "hooked", {});
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(callsOf(id)).toEqual([
      "middleware:before",
      "init",
      "onStart:db",
      "onStartAttempt:1",
      `run:db:hello ${id.slice(0, 4)}`,
      'onSuccess:{"done":true}',
      "onComplete:true",
      "cleanup:db",
      "middleware:after",
    ]);
  });

  it("across a wait: init and middleware again, onStart and onStartAttempt once (recorded), onWait at the suspension, cleanup there, onResume once", async () => {
    const token = await newToken();
    const suspended = tw.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "hooked", { token });
    await suspended;
    expect(callsOf(id)).toEqual(["middleware:before", "init", "onStart:db", "onStartAttempt:1", `run:db:hello ${id.slice(0, 4)}`, "onWait:token", "cleanup:db"]);

    const done = finished(id);
    await complete(token, { n: 1 });
    expect((await done).status).toBe("COMPLETED");
    expect(callsOf(id).slice(7)).toEqual([
      "middleware:before",
      "init",
      `run:db:hello ${id.slice(0, 4)}`,
      "onResume:token",
      "waited:true",
      'onSuccess:{"done":true}',
      "onComplete:true",
      "cleanup:db",
      "middleware:after",
    ]);
    // The hooks' records: named, so the wait keeps the first number of the code's calls.
    expect(await ledger(id)).toEqual([
      { epoch: -1, step_key: "hook:onStart", kind: "step" },
      { epoch: 0, step_key: "#0", kind: "token" },
      { epoch: 0, step_key: "hook:onResume:0:#0", kind: "step" },
      { epoch: 0, step_key: "hook:onStartAttempt", kind: "step" },
    ]);
    // What differs from Trigger.dev is said once, in the task log.
    for (const notice of ["init-per-execution", "cleanup-at-wait", "on-wait-after-checkpoint"]) expect(logs.notices().filter((n) => n === notice)).toEqual([notice]);
  });

  it("call onWait and onResume around a wait that needs no suspension", async () => {
    const token = await newToken();
    await complete(token, { n: 2 });
    const { id } = await triggerRun(te.engine, te.env, "hooked", { token });
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(callsOf(id)).toContain("onWait:token");
    expect(callsOf(id).slice(callsOf(id).indexOf("onWait:token"), callsOf(id).indexOf("onWait:token") + 3)).toEqual(["onWait:token", "onResume:token", "waited:true"]);
  });

  it("describe each kind of wait: a child run, a batch, a sleep", async () => {
    const { id } = await triggerRun(te.engine, te.env, "waits-for-all", {});
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toEqual([2, 4, 6]);
    const seen = callsOf(id);
    const children = await te.db.pool.query<{ id: string; batch_id: string | null }>(`SELECT id, batch_id FROM runs WHERE parent_run_id = $1 ORDER BY created_at, batch_index NULLS FIRST`, [id]);
    const [single, batched] = [children.rows.find((r) => !r.batch_id)!, children.rows.find((r) => r.batch_id)!];
    expect(seen.filter((c) => c.startsWith("onWait:"))).toEqual([
      `onWait:${JSON.stringify({ type: "task", runId: single.id })}`,
      `onWait:${JSON.stringify({ type: "batch", batchId: batched.batch_id, runCount: 2 })}`,
      expect.stringMatching(/^onWait:\{"type":"duration","date":"\d{4}-.*Z"\}$/),
    ]);
    expect(seen.filter((c) => c.startsWith("onResume:"))).toEqual(["onResume:task", "onResume:batch", "onResume:duration"]);
  });

  it("a retried run: onStart once per run, onStartAttempt per attempt, catchError told the retry, onFailure only when it will not retry", async () => {
    const { id } = await triggerRun(te.engine, te.env, "flaky-hooked", {});
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(callsOf(id)).toEqual(["onStart", "onStartAttempt:1", "catchError:first attempt fails:true:2", "onStartAttempt:2", "onSuccess"]);
  });
});

describe("catchError", () => {
  // Runs left waiting for a retry minutes away are canceled, as a user would.
  afterEach(async () => {
    const { rows } = await te.db.pool.query<{ id: string }>(`SELECT id FROM runs WHERE task_identifier = 'caught' AND status = 'QUEUED'`);
    for (const { id } of rows) await cancelRun(te.engine, te.env.id, id);
  });

  it("skipRetrying fails the run at once; onFailure and onComplete run", async () => {
    const { id } = await triggerRun(te.engine, te.env, "caught", { mode: "skip" });
    expect((await finished(id)).status).toBe("FAILED");
    expect(callsOf(id)).toEqual(["catchError", "onFailure:run failed", "onComplete:false"]);
    expect((await getRunRow(te, id)).attempt_number).toBe(1);
  });

  it("retryDelayInMs retries after that delay, not the task's backoff", async () => {
    const before = Date.now();
    const retry = tw.worker.events.next("runRetryScheduled");
    const { id } = await triggerRun(te.engine, te.env, "caught", { mode: "delay" });
    const scheduled = await retry;
    expect(scheduled.runId).toBe(id);
    expect(scheduled.at.getTime() - before).toBeGreaterThanOrEqual(5 * 60_000);
    expect(scheduled.at.getTime() - Date.now()).toBeLessThanOrEqual(5 * 60_000);
    expect(callsOf(id)).toEqual(["catchError"]);
  });

  it("an error it returns is recorded instead, and the run is not retried (as Trigger.dev)", async () => {
    const { id } = await triggerRun(te.engine, te.env, "caught", { mode: "replace" });
    expect((await finished(id)).status).toBe("FAILED");
    expect((await getRunRow(te, id)).error).toMatchObject({ message: "replaced by catchError" });
    expect(callsOf(id)).toEqual(["catchError", "onFailure:replaced by catchError", "onComplete:false"]);
  });

  it("retry settings it returns count instead of the task's", async () => {
    const { id } = await triggerRun(te.engine, te.env, "caught", { mode: "options" });
    expect((await finished(id)).status).toBe("FAILED");
    expect((await getRunRow(te, id)).attempt_number).toBe(1);
  });

  it("is not asked about an AbortTaskRunError: the run fails without retry", async () => {
    const { id } = await triggerRun(te.engine, te.env, "caught", { mode: "abort" });
    expect((await finished(id)).status).toBe("FAILED");
    expect(callsOf(id)).toEqual(["onFailure:no point retrying", "onComplete:false"]);
    expect((await getRunRow(te, id)).error).toMatchObject({ name: "AbortTaskRunError", message: "no point retrying" });
  });

  it("returning nothing leaves the task's retry settings in force", async () => {
    const retry = tw.worker.events.next("runRetryScheduled");
    const { id } = await triggerRun(te.engine, te.env, "caught", { mode: "default" });
    const scheduled = await retry;
    expect(scheduled.runId).toBe(id);
    expect(scheduled.at.getTime() - Date.now()).toBeGreaterThan(50_000);
    expect(callsOf(id)).toEqual(["catchError"]);
  });
});

describe("onCancel", () => {
  it("runs when the run is canceled while it executes, then cleanup", async () => {
    const started = tw.worker.events.next("runStarted");
    const { id } = await triggerRun(te.engine, te.env, "cancellable-hooked", {});
    await started;
    await eventually(async () => callsOf(id).includes("run"));
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
    await cancelRun(te.engine, te.env.id, id);
    await abandoned;
    expect(callsOf(id)).toEqual(["run", "onCancel:true", "cleanup"]);
  });
});

describe("onCancel when the run was not canceled", () => {
  it("is not called when the execution stops because its worker does (cleanup is)", async () => {
    const other = await startTestWorker(te, [abandoned]);
    const started = other.worker.events.next("runStarted");
    const { id } = await triggerRun(te.engine, te.env, "abandoned-hooked", {});
    await started;
    await eventually(async () => callsOf(id).includes("run"));
    await other.kill();
    await eventually(async () => callsOf(id).includes("cleanup"));
    expect(callsOf(id)).toEqual(["run", "cleanup"]);
    expect((await getRunRow(te, id)).status).toBe("EXECUTING");
  });
});

describe("global hooks", () => {
  it("tasks.onStart and tasks.middleware apply to every task, before the task's own, until removed", async () => {
    tasks.onStart("test-global-start", ({ ctx }) => called(ctx, "replaced global onStart"));
    // Registering the same named hook again replaces it (a task file imported twice registers it once).
    const removeStart = tasks.onStart("test-global-start", ({ ctx, task: id }) => called(ctx, `global onStart:${id}`));
    const removeMiddleware = tasks.middleware(async ({ ctx, next }) => {
      called(ctx, "global middleware");
      await next();
    });
    try {
      const { id } = await triggerRun(te.engine, te.env, "plain-hooked", {});
      expect((await finished(id)).status).toBe("COMPLETED");
      expect(callsOf(id)).toEqual(["global middleware", "global onStart:plain-hooked", "task onStart", "run"]);
    } finally {
      removeStart();
      removeMiddleware();
    }
    const { id } = await triggerRun(te.engine, te.env, "plain-hooked", {});
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(callsOf(id)).toEqual(["task onStart", "run"]);
  });
});

describe("every kind of global hook", () => {
  it("runs where the task's own would, global first (catchError: after the task's)", async () => {
    const g = (what: string) => (params: { ctx: { run: { id: string } } }) => void called(params.ctx, `global ${what}`);
    const removers = [
      tasks.onStartAttempt(g("onStartAttempt")),
      tasks.onWait(g("onWait")),
      tasks.onResume(g("onResume")),
      tasks.onSuccess(g("onSuccess")),
      tasks.onFailure(g("onFailure")),
      tasks.onComplete(g("onComplete")),
      tasks.catchError(g("catchError")),
    ];
    try {
      const token = await newToken();
      const suspended = tw.worker.events.next("runSuspended");
      const { id } = await triggerRun(te.engine, te.env, "hooked", { token });
      await suspended;
      const done = finished(id);
      await complete(token, { n: 3 });
      expect((await done).status).toBe("COMPLETED");
      expect(callsOf(id).filter((c) => /^(global )?on(StartAttempt|Wait|Resume|Success|Complete)/.test(c))).toEqual([
        "global onStartAttempt",
        "onStartAttempt:1",
        "global onWait",
        "onWait:token",
        "global onResume",
        "onResume:token",
        "global onSuccess",
        'onSuccess:{"done":true}',
        "global onComplete",
        "onComplete:true",
      ]);

      const retried = await triggerRun(te.engine, te.env, "flaky-hooked", {});
      expect((await finished(retried.id)).status).toBe("COMPLETED");
      expect(callsOf(retried.id).slice(0, 4)).toEqual(["onStart", "global onStartAttempt", "onStartAttempt:1", "catchError:first attempt fails:true:2"]);
      expect(callsOf(retried.id)[4]).toBe("global catchError");

      const skipped = await triggerRun(te.engine, te.env, "caught", { mode: "skip" });
      expect((await finished(skipped.id)).status).toBe("FAILED");
      expect(callsOf(skipped.id)).toEqual(["global onStartAttempt", "catchError", "global onFailure", "onFailure:run failed", "global onComplete", "onComplete:false"]);
    } finally {
      for (const remove of removers) remove();
    }
  });
});

describe("locals", () => {
  it("are per execution: set outside a run is refused, get outside a run is undefined", () => {
    expect(locals.get(Greeting)).toBeUndefined();
    expect(() => locals.set(Greeting, "x")).toThrow(/locals\.set\(\) can only be called inside a task run/);
    expect(() => locals.getOrThrow(Greeting)).toThrow("Local with id greeting not found");
  });
});
