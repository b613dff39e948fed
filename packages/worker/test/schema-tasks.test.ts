// schemaTask, task handles (trigger/triggerAndWait/batchTriggerAndWait with unwrap), queue()
// declarations and the guard against durable calls inside a step's function, on a real worker.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { triggerRun } from "@svc/runtime/engine";
import { retry, schemaTask, step, SubtaskUnwrapError, task, tasks, wait } from "@svc/runtime";
import { loadTasks } from "../src/tasks/load-tasks.ts";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const hookCalls: string[] = [];

const createUser = schemaTask({
  id: "create-user",
  schema: z.object({ name: z.string().min(1), age: z.coerce.number().int(), plan: z.enum(["free", "pro"]).default("free") }),
  retry: { maxAttempts: 3, minTimeoutInMs: 10 },
  run: async (payload) => ({ greeting: `Hello ${payload.name}`, age: payload.age, plan: payload.plan }),
  onStart: ({ payload }) => void hookCalls.push(`onStart:${JSON.stringify(payload)}`),
  onFailure: () => void hookCalls.push("onFailure"),
});
const byFunction = schemaTask({
  id: "parsed-by-function",
  schema: (value: unknown) => {
    if (typeof value !== "number") throw new Error("expected a number");
    return { doubled: value * 2 };
  },
  run: async (payload) => payload.doubled,
});
const boom = task({ id: "boom", retry: { maxAttempts: 1 }, run: async (): Promise<string> => { throw new Error("boom!"); } });
const parent = task({
  id: "handle-parent",
  run: async () => {
    const ada = await createUser.triggerAndWait({ name: "Ada", age: 36 }).unwrap();
    const typed = await tasks.triggerAndWait<typeof createUser>("create-user", { name: "Grace", age: "85" as unknown as number });
    const { runs } = await createUser.batchTriggerAndWait([{ payload: { name: "Alan", age: 41 } }, { payload: { name: "Edsger", age: 72, plan: "pro" } }]);
    let unwrapped: unknown;
    try {
      await boom.triggerAndWait().unwrap();
    } catch (error) {
      const e = error as SubtaskUnwrapError;
      unwrapped = { isSubtaskError: e instanceof SubtaskUnwrapError, name: e.name, message: e.message, taskId: e.taskId, runIdIsChild: e.runId.startsWith("run_") };
    }
    return { ada, grace: typed.ok ? typed.output : null, batch: runs.map((r) => (r.ok ? r.output.plan : "failed")), unwrapped };
  },
});
const nestedWait = task({ id: "nested-wait", retry: { maxAttempts: 1 }, run: async () => step.run("outer", () => wait.for({ seconds: 1 })) });
const nestedTry = task({ id: "nested-try", retry: { maxAttempts: 1 }, run: async () => retry.onThrow(() => step.run("inner", () => 1), { maxAttempts: 1 }) });

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [createUser, byFunction, boom, parent, nestedWait, nestedTry]);
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

const finished = (id: string) => tw.worker.events.next("runFinished", (e) => e.runId === id);
/** A run's output as task code returned it (stored as superjson). */
const outputOf = async (id: string) => (JSON.parse((await getRunRow(te, id)).output!) as { json: unknown }).json;

describe("schemaTask", () => {
  it("hands run (and the hooks) the payload as the schema makes it: coerced, defaults filled", async () => {
    const { id } = await triggerRun(te.engine, te.env, "create-user", { name: "Ada", age: "36" });
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(await outputOf(id)).toEqual({ greeting: "Hello Ada", age: 36, plan: "free" });
    expect(hookCalls).toContain('onStart:{"name":"Ada","age":36,"plan":"free"}');
  });

  it("fails a run whose payload the schema refuses at once: no retry, no hooks, a TaskPayloadParsedError naming the field", async () => {
    const before = hookCalls.length;
    const { id } = await triggerRun(te.engine, te.env, "create-user", { age: 3 });
    expect((await finished(id)).status).toBe("FAILED");
    const run = await getRunRow(te, id);
    expect(run.attempt_number).toBe(1);
    expect(run.error).toMatchObject({ name: "TaskPayloadParsedError", message: expect.stringMatching(/^Parsing payload with schema failed: name: /) });
    expect(hookCalls.length).toBe(before);
  });

  it("takes a function as its schema", async () => {
    const { id } = await triggerRun(te.engine, te.env, "parsed-by-function", 21);
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(await outputOf(id)).toBe(42);
    const refused = await triggerRun(te.engine, te.env, "parsed-by-function", "x");
    expect((await finished(refused.id)).status).toBe("FAILED");
    expect((await getRunRow(te, refused.id)).error).toMatchObject({ message: "Parsing payload with schema failed: expected a number" });
  });

  it("parses a payload before its handle triggers: a refused one is never sent", async () => {
    await expect(createUser.trigger({ name: "", age: 1 })).rejects.toThrow(/too_small|at least 1|>=1/i);
    await expect(byFunction.batchTrigger([{ payload: "x" as unknown as number }])).rejects.toThrow("expected a number");
  });
});

describe("task handles inside a run", () => {
  it("triggerAndWait(…).unwrap(), tasks.triggerAndWait<typeof task>, batchTriggerAndWait, and a SubtaskUnwrapError for a failed child", async () => {
    const { id } = await triggerRun(te.engine, te.env, "handle-parent", {});
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(await outputOf(id)).toEqual({
      ada: { greeting: "Hello Ada", age: 36, plan: "free" },
      grace: { greeting: "Hello Grace", age: 85, plan: "free" },
      batch: ["free", "pro"],
      unwrapped: { isSubtaskError: true, name: "SubtaskUnwrapError", message: "Error in boom: boom!", taskId: "boom", runIdIsChild: true },
    });
  });
});

describe("durable calls inside a step's function", () => {
  it("are refused with an error that says where they go", async () => {
    const { id } = await triggerRun(te.engine, te.env, "nested-wait", {});
    expect((await finished(id)).status).toBe("FAILED");
    expect((await getRunRow(te, id)).error).toMatchObject({ message: expect.stringContaining('wait.for()/wait.until() cannot be called inside step.run("outer")') });
    const tried = await triggerRun(te.engine, te.env, "nested-try", {});
    expect((await finished(tried.id)).status).toBe("FAILED");
    expect((await getRunRow(te, tried.id)).error).toMatchObject({ message: expect.stringContaining("step.run() cannot be called inside retry.onThrow()") });
    // Nothing recorded for the step; retry.onThrow recorded its one try, as failed.
    const ledger = await te.db.pool.query(`SELECT run_id, step_key, target FROM run_ledger WHERE run_id = ANY($1)`, [[id, tried.id]]);
    expect(ledger.rows).toEqual([{ run_id: tried.id, step_key: "#0", target: "retry.onThrow 1/1" }]);
  });
});

describe("queue()", () => {
  it("gives its limit to the tasks that pass it or name it; the worker registers them with it", async () => {
    const loaded = await loadTasks(fileURLToPath(new URL("./fixtures/queues/svc.config.ts", import.meta.url)));
    const queues = Object.fromEntries(loaded.tasks.map((t) => [t.id, t.queue ?? null]));
    expect(queues).toEqual({
      "welcome-email": { name: "emails", concurrencyLimit: 2 },
      "digest-email": { name: "emails", concurrencyLimit: 2 },
      "own-limit-email": { name: "emails-bulk", concurrencyLimit: 5 },
      "default-queue-email": null,
    });
    const other = await startTestWorker(te, loaded.tasks);
    try {
      const { rows } = await te.db.pool.query(
        `SELECT task_identifier, queue_name, concurrency_limit FROM worker_tasks WHERE environment_id = $1 AND task_identifier LIKE '%-email' ORDER BY task_identifier`,
        [te.env.id],
      );
      expect(rows).toEqual([
        { task_identifier: "default-queue-email", queue_name: "task/default-queue-email", concurrency_limit: null },
        { task_identifier: "digest-email", queue_name: "emails", concurrency_limit: 2 },
        { task_identifier: "own-limit-email", queue_name: "emails-bulk", concurrency_limit: 5 },
        { task_identifier: "welcome-email", queue_name: "emails", concurrency_limit: 2 },
      ]);
    } finally {
      await other.stop();
    }
  });
});
