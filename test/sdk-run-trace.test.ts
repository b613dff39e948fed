import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configure, idempotencyKeys, tasks as sdkTasks } from "@trigger.dev/sdk";
import { ApiClient, assembleRunTracePages, parsePacket, type RetrieveRunTracePageResponseBody } from "@trigger.dev/core/v3";
import { logger, step, task, triggerAndWait } from "../packages/runtime/src/sdk/index.ts";
import { startTestWorker, type TestWorker } from "../packages/worker/test/harness.ts";
import { startTestApi, type TestApi } from "../packages/api/test/harness.ts";

// A real worker runs a task whose first attempt fails, whose second records a step and waits on
// a child run; the published SDK's API client then reads what svc knows of it (its zod schemas
// check every answer): the result, the trace as a tree and as pages, a span, the events. The task
// also shows what its context says of the idempotency key the SDK triggered it with.
let api: TestApi;
let tw: TestWorker;
let client: ApiClient;

const child = task({ id: "trace-child", run: async (payload: { n: number }) => payload.n * 2 });
const parent = task({
  id: "trace-parent",
  retry: { maxAttempts: 2, minTimeoutInMs: 10, maxTimeoutInMs: 10, factor: 1, randomize: false },
  run: async (payload: { n: number }, { ctx }) => {
    const charged = await step.run("charge", () => payload.n + 1);
    if (ctx.attempt.number === 1) throw new TypeError("the first attempt fails");
    const doubled = await triggerAndWait<number>("trace-child", { n: charged });
    return { doubled: doubled.ok ? doubled.output : null, key: ctx.run.idempotencyKey, scope: ctx.run.idempotencyKeyScope };
  },
});

const chatty = task({
  id: "trace-logger",
  run: async (payload: { n: number }) => {
    logger.info("charging", { n: payload.n });
    const charged = await step.run("charge", () => {
      console.warn("inside the step");
      return payload.n + 1;
    });
    logger.error("charged", { charged });
    return charged;
  },
});

beforeAll(async () => {
  api = await startTestApi();
  const baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  api.engine.apiUrl = baseURL;
  tw = await startTestWorker(api, [child, parent, chatty]);
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  client = new ApiClient(baseURL, api.project.environments.dev.secretKey, undefined, { retry: { maxAttempts: 1 } });
});
afterAll(async () => {
  await tw?.stop();
  await api?.close();
});

async function finishedParent(): Promise<{ id: string; publicAccessToken: string }> {
  const key = await idempotencyKeys.create("trace-order-7", { scope: "global" });
  const handle = await sdkTasks.trigger("trace-parent", { n: 20 }, { idempotencyKey: key });
  await tw.worker.events.next("runFinished", (e) => e.runId === handle.id);
  return handle;
}

describe("what svc knows of a finished run, through the SDK's API client", () => {
  let run: { id: string; publicAccessToken: string };
  beforeAll(async () => {
    run = await finishedParent();
  });

  it("gives its result; its task saw the idempotency key and scope it was triggered with", async () => {
    const result = await client.getRunResult(run.id);
    expect(result).toMatchObject({ ok: true, id: run.id, taskIdentifier: "trace-parent", outputType: "application/super+json" });
    const { output, outputType } = result as { output: string; outputType: string };
    expect(await parsePacket({ data: output, dataType: outputType })).toEqual({ doubled: 42, key: "trace-order-7", scope: "global" });
  });

  it("gives its trace as a tree: the run, its attempts, and under each the steps, waits and runs triggered in it", async () => {
    const { trace } = await client.retrieveRunTrace(run.id);
    expect(trace.traceId).toMatch(/^[0-9a-f]{32}$/);
    const root = trace.rootSpan;
    expect(root).toMatchObject({ runId: run.id, data: { message: "trace-parent", isError: false, isPartial: false, level: "TRACE" } });
    expect(root.data.properties).toMatchObject({ status: "COMPLETED" });
    const [first, second] = root.children;
    expect(root.children.map((s) => s.data.message)).toEqual(["Attempt 1", "Attempt 2"]);
    expect(first!.data).toMatchObject({ isError: true, isPartial: false });
    expect(first!.data.events).toEqual([expect.objectContaining({ name: "exception", properties: { exception: { type: "TypeError", message: "the first attempt fails" } } })]);
    expect(first!.children.map((s) => s.data.message)).toEqual(["charge"]);
    expect(second!.data).toMatchObject({ isError: false, isPartial: false });
    const messages = second!.children.map((s) => s.data.message);
    expect(messages).toContain("triggerAndWait trace-child");
    expect(messages).toContain("trace-child");
    for (const span of [root, ...root.children, ...root.children.flatMap((s) => s.children)]) {
      expect(span.data.duration).toBeGreaterThanOrEqual(0);
      expect(span.children.every((c) => c.parentId === span.id)).toBe(true);
    }
    // The same ids on every read.
    expect((await client.retrieveRunTrace(run.id)).trace.rootSpan.children.map((s) => s.id)).toEqual(root.children.map((s) => s.id));
  });

  it("gives the same spans in pages, which the SDK assembles into the same tree, with the failed attempt", async () => {
    const { trace } = await client.retrieveRunTrace(run.id);
    const pages: RetrieveRunTracePageResponseBody[] = [];
    let after: string | undefined;
    do {
      const page = await client.retrieveRunTracePage(run.id, { limit: 2, ...(after ? { after } : {}) });
      expect(page.data.length).toBeLessThanOrEqual(2);
      pages.push(page);
      after = page.pagination.next;
    } while (after);
    expect(pages.length).toBeGreaterThan(2);
    const failures = pages.flatMap((p) => p.attemptFailures);
    expect(failures).toEqual([{ spanId: trace.rootSpan.children[0]!.id, attemptNumber: 1, runId: run.id }]);
    const [assembled] = assembleRunTracePages(pages);
    const shape = (span: { id: string; children: { id: string; children: unknown[] }[] }): unknown => ({ id: span.id, children: span.children.map((c) => shape(c as never)) });
    expect(shape(assembled as never)).toEqual(shape(trace.rootSpan as never));
  });

  it("gives one span, naming the run a child span stands for", async () => {
    const { trace } = await client.retrieveRunTrace(run.id);
    const childSpan = trace.rootSpan.children[1]!.children.find((s) => s.data.message === "trace-child")!;
    const span = await client.retrieveSpan(run.id, childSpan.id);
    expect(span).toMatchObject({ spanId: childSpan.id, parentId: trace.rootSpan.children[1]!.id, runId: run.id, entityType: "child", isError: false });
    expect(span.triggeredRuns).toEqual([expect.objectContaining({ taskIdentifier: "trace-child", status: "COMPLETED", runId: childSpan.data.properties!.runId })]);
    const missing = await api.app.inject({ method: "GET", url: `/api/v1/runs/${run.id}/spans/${"0".repeat(16)}`, headers: api.devAuth });
    expect(missing.statusCode).toBe(404);
    const bad = await api.app.inject({ method: "GET", url: `/api/v1/runs/${run.id}/spans/not-a-span`, headers: api.devAuth });
    expect(bad.statusCode).toBe(400);
  });

  it("gives its spans as events, and reads them with the run's public token", async () => {
    const { trace } = await client.retrieveRunTrace(run.id);
    const asRun = new ApiClient(api.engine.apiUrl, run.publicAccessToken, undefined, { retry: { maxAttempts: 1 } });
    const { events } = await asRun.listRunEvents(run.id);
    expect(events[0]).toMatchObject({ spanId: trace.rootSpan.id, parentId: null, runId: run.id, message: "trace-parent", level: "TRACE", kind: "INTERNAL", taskSlug: "trace-parent" });
    expect(events[0].startTime).toMatch(/^[0-9]{19}$/);
    expect(events.filter((e: { attemptNumber: number | null }) => e.attemptNumber === 2).length).toBeGreaterThanOrEqual(3);
    expect((await asRun.retrieveRunTrace(run.id)).trace.rootSpan.id).toBe(trace.rootSpan.id);
    const other = await sdkTasks.trigger("trace-child", { n: 1 });
    const denied = await api.app.inject({ method: "GET", url: `/api/v1/runs/${run.id}/events`, headers: { authorization: `Bearer ${other.publicAccessToken}` } });
    expect(denied.statusCode).toBe(403);
  });

  it("pages refuse a cursor that is not a span of the trace, and sizes out of range", async () => {
    for (const query of ["page[after]=ffffffffffffffff", "page[size]=0", "page[size]=10001", "page[size]=two"]) {
      const res = await api.app.inject({ method: "GET", url: `/api/v1/runs/${run.id}/trace?${query}`, headers: api.devAuth });
      expect(res.statusCode, query).toBe(400);
      expect(typeof res.json().error).toBe("string");
    }
  });
});

describe("the trace of a run under way", () => {
  it("shows a DELAYED run's span as partial, with no attempt yet", async () => {
    const { id } = await sdkTasks.trigger("trace-child", { n: 3 }, { delay: "1h" });
    const { trace } = await client.retrieveRunTrace(id);
    expect(trace.rootSpan).toMatchObject({ data: { isPartial: true, isError: false }, children: [] });
    expect(trace.rootSpan.data.properties).toMatchObject({ status: "DELAYED" });
  });
});

describe("what a run logged, in its trace and events", () => {
  it("gives each line as a zero-length LOG span under its attempt, or under the step it was logged in, with its level and attributes", async () => {
    const handle = await sdkTasks.trigger("trace-logger", { n: 4 });
    // Its three lines may be written in one batch or two (a flush every 200 ms, and at its end).
    const written = new Promise<void>((resolve) => {
      let seen = 0;
      const off = tw.worker.events.on("runLogsWritten", (e) => {
        if (!e.runIds.includes(handle.id) || (seen += e.stored) < 3) return;
        off();
        resolve();
      });
    });
    await tw.worker.events.next("runFinished", (e) => e.runId === handle.id);
    await written;
    const { trace } = await client.retrieveRunTrace(handle.id);
    const [attempt] = trace.rootSpan.children;
    // By start: a step's start is only bounded (the attempt's start, here), so it comes first.
    expect(attempt!.children.map((s) => [s.data.message, s.data.level])).toEqual([
      ["charge", "TRACE"],
      ["charging", "INFO"],
      ["charged", "ERROR"],
    ]);
    const stepSpan = attempt!.children[0]!;
    expect(stepSpan.children.map((s) => [s.data.message, s.data.level])).toEqual([["inside the step", "WARN"]]);
    expect(stepSpan.children[0]!.data.properties).toEqual({ "svc.step": 'step.run("charge")', "svc.source": "console" });
    expect(attempt!.children[1]!.data).toMatchObject({ duration: 0, isError: false, isPartial: false, properties: { n: 4 } });
    const { events } = await client.listRunEvents(handle.id);
    const logs = events.filter((e: { kind: string }) => e.kind === "LOG");
    expect(logs.map((e: { message: string; level: string }) => [e.message, e.level])).toEqual([
      ["charging", "INFO"],
      ["inside the step", "WARN"],
      ["charged", "ERROR"],
    ]);
    const span = await client.retrieveSpan(handle.id, attempt!.children[2]!.id);
    expect(span).toMatchObject({ entityType: "log", level: "ERROR", properties: { charged: 5 } });
  });
});
