// retry.onThrow and retry.fetch are durable: each try's outcome is recorded and the pauses are
// durable sleeps, so a run resumed after a pause replays its recorded tries without making them
// again. Time is a FakeClock: each pause suspends the run until the test moves the clock past it.
import { createServer, type IncomingMessage, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, triggerRun } from "@svc/runtime/engine";
import { AbortTaskRunError, retry, task } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";
import { collectTaskLogs } from "./task-logs.ts";

const clock = new FakeClock(new Date("2030-05-06T07:00:00Z"));
let te: TestEngine;
let tw: TestWorker;
const logs = collectTaskLogs();
const tries = new Map<string, number[]>();
const tried = (runId: string, attempt: number) => void tries.set(runId, [...(tries.get(runId) ?? []), attempt]);

/** A payment API the tasks call: answers each path with its queue of replies, and counts requests. */
interface Reply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}
const replies = new Map<string, Reply[]>();
const requests: { path: string; retryCount: string | undefined; body: string }[] = [];
let server: Server;
let base: string;

async function readBody(req: IncomingMessage): Promise<string> {
  let body = "";
  for await (const chunk of req) body += chunk;
  return body;
}

const flakyCall = task({
  id: "flaky-call",
  retry: { maxAttempts: 1 },
  run: async (payload: { failures: number; maxAttempts: number; abort?: boolean }, { ctx }) =>
    retry.onThrow(
      async ({ attempt, maxAttempts }) => {
        tried(ctx.run.id, attempt);
        if (payload.abort) throw new AbortTaskRunError("card declined for good");
        if (attempt <= payload.failures) throw new Error(`try ${attempt} of ${maxAttempts} failed`);
        return { attempt, at: new Date(0) };
      },
      { maxAttempts: payload.maxAttempts, minTimeoutInMs: 1000, factor: 2, randomize: false },
    ),
});

const fetcher = task({
  id: "fetcher",
  retry: { maxAttempts: 1 },
  run: async (payload: { path: string; init?: Parameters<typeof retry.fetch>[1]; url?: string }) => {
    const response = await retry.fetch(payload.url ?? `${base}${payload.path}`, { method: "POST", body: "charge", ...payload.init });
    return { status: response.status, body: await response.text(), custom: response.headers.get("x-custom"), ok: response.ok };
  },
});

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const body = await readBody(req);
    const path = req.url ?? "/";
    requests.push({ path, retryCount: req.headers["x-retry-count"] as string | undefined, body });
    const reply = replies.get(path)?.shift() ?? { status: 500, body: "no reply queued" };
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (res.destroyed) return;
    res.writeHead(reply.status, { "content-type": "text/plain", ...reply.headers }).end(reply.body ?? "");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [flakyCall, fetcher], { timerLoop: false, taskLogs: logs });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
  await new Promise((resolve) => server?.close(resolve));
});

/**
 * Triggers a run and moves the clock past each pause it suspends in, until it finishes. Returns
 * the run's id and the length of each pause (from the clock to its sleep's wake-up time).
 */
async function runThroughPauses(taskId: string, payload: unknown): Promise<{ id: string; status: string; pauses: number[] }> {
  let id: string | null = null;
  const pauses: number[] = [];
  let suspended = tw.worker.events.next("runSuspended", (e) => id === null || e.runId === id);
  const ended = new Promise<{ status: string }>((resolve) => {
    const off = tw.worker.events.on("runFinished", (e) => {
      if (e.runId === id) {
        off();
        resolve(e);
      }
    });
  });
  id = (await triggerRun(te.engine, te.env, taskId, payload)).id;
  for (;;) {
    const next = await Promise.race([suspended.then(() => "suspended" as const), ended.then(() => "finished" as const)]);
    if (next === "finished") return { id, status: (await ended).status, pauses };
    const { rows } = await te.db.pool.query<{ timeout_at: Date }>(
      `SELECT w.timeout_at FROM run_ledger l JOIN waitpoints w ON w.id = l.waitpoint_id WHERE l.run_id = $1 AND NOT l.resolved`,
      [id],
    );
    const wakeAt = rows[0]!.timeout_at.getTime();
    pauses.push(wakeAt - clock.now().getTime());
    suspended = tw.worker.events.next("runSuspended", (e) => e.runId === id);
    clock.set(wakeAt);
    await tw.worker.timers.tick();
  }
}

async function ledger(runId: string) {
  const { rows } = await te.db.pool.query<{ step_key: string; kind: string; target: string }>(`SELECT step_key, kind, target FROM run_ledger WHERE run_id = $1 ORDER BY step_key`, [runId]);
  return rows.map((r) => `${r.step_key} ${r.kind} ${r.target}`);
}

const output = async (id: string) => (JSON.parse((await getRunRow(te, id)).output!) as { json: unknown }).json;

describe("retry.onThrow", () => {
  it("retries with backoff as durable sleeps, and never makes a recorded try again", async () => {
    const { id, status, pauses } = await runThroughPauses("flaky-call", { failures: 2, maxAttempts: 3 });
    expect(status).toBe("COMPLETED");
    expect(pauses).toEqual([1000, 2000]);
    // Three executions replayed the run; each try ran once.
    expect(tries.get(id)).toEqual([1, 2, 3]);
    expect(await output(id)).toEqual({ attempt: 3, at: "1970-01-01T00:00:00.000Z" });
    expect(await ledger(id)).toEqual(["#0 step retry.onThrow 1/3", "#1 datetime for:1000ms", "#2 step retry.onThrow 2/3", "#3 datetime for:2000ms", "#4 step retry.onThrow 3/3"]);
    expect(logs.of(id).filter((r) => !r.replayed).map((r) => [r.level, r.message])).toEqual([
      ["warn", "retry.onThrow: try 1/3 failed, trying again in 1000 ms"],
      ["warn", "retry.onThrow: try 2/3 failed, trying again in 2000 ms"],
    ]);
  });

  it("throws the last try's error once the tries are spent", async () => {
    const { id, status } = await runThroughPauses("flaky-call", { failures: 9, maxAttempts: 2 });
    expect(status).toBe("FAILED");
    expect(tries.get(id)).toEqual([1, 2]);
    expect((await getRunRow(te, id)).error).toMatchObject({ name: "Error", message: "try 2 of 2 failed" });
  });

  it("does not retry an AbortTaskRunError, nor record it", async () => {
    const { id, status, pauses } = await runThroughPauses("flaky-call", { failures: 0, maxAttempts: 5, abort: true });
    expect(status).toBe("FAILED");
    expect(pauses).toEqual([]);
    expect(tries.get(id)).toEqual([1]);
    expect((await getRunRow(te, id)).error).toMatchObject({ name: "AbortTaskRunError" });
    expect(await ledger(id)).toEqual([]);
  });
});

describe("retry.fetch", () => {
  it("retries 5xx answers with backoff, sends each request once however often the run replays, and rebuilds the response", async () => {
    replies.set("/charge", [{ status: 503 }, { status: 502 }, { status: 200, body: "charged", headers: { "x-custom": "yes" } }]);
    const { id, status, pauses } = await runThroughPauses("fetcher", { path: "/charge", init: { retry: { byStatus: { "5xx": { strategy: "backoff", maxAttempts: 5, minTimeoutInMs: 500, factor: 2, randomize: false } } } } });
    expect(status).toBe("COMPLETED");
    expect(pauses).toEqual([500, 1000]);
    expect(await output(id)).toEqual({ status: 200, body: "charged", custom: "yes", ok: true });
    expect(requests.filter((r) => r.path === "/charge")).toEqual([
      { path: "/charge", retryCount: "1", body: "charge" },
      { path: "/charge", retryCount: "2", body: "charge" },
      { path: "/charge", retryCount: "3", body: "charge" },
    ]);
  });

  it("returns an answer its options do not retry as it is (a 404), and the last answer once the tries are spent", async () => {
    replies.set("/missing", [{ status: 404, body: "no such order" }]);
    const missing = await runThroughPauses("fetcher", { path: "/missing" });
    expect(await output(missing.id)).toEqual({ status: 404, body: "no such order", custom: null, ok: false });
    expect(missing.pauses).toEqual([]);

    replies.set("/down", [{ status: 500, body: "down 1" }, { status: 500, body: "down 2" }]);
    const down = await runThroughPauses("fetcher", { path: "/down", init: { retry: { byStatus: { "500": { strategy: "backoff", maxAttempts: 2, minTimeoutInMs: 100, randomize: false } } } } });
    expect(await output(down.id)).toEqual({ status: 500, body: "down 2", custom: null, ok: false });
    expect(down.pauses).toEqual([100]);
  });

  it("waits until a rate limit's reset header says", async () => {
    const resetAt = clock.now().getTime() + 7_000;
    replies.set("/limited", [{ status: 429, headers: { "x-ratelimit-reset": String(resetAt) } }, { status: 200, body: "ok now" }]);
    const { id, pauses } = await runThroughPauses("fetcher", {
      path: "/limited",
      init: { retry: { byStatus: { "429": { strategy: "headers", limitHeader: "x-ratelimit-limit", remainingHeader: "x-ratelimit-remaining", resetHeader: "x-ratelimit-reset" } } } },
    });
    expect(pauses).toEqual([7_000]);
    expect(await output(id)).toMatchObject({ status: 200, body: "ok now" });
  });

  it("retries a try that times out, and a connection that fails", async () => {
    replies.set("/slow", [{ status: 200, body: "late", delayMs: 2_000 }, { status: 200, body: "quick" }]);
    const slow = await runThroughPauses("fetcher", { path: "/slow", init: { timeoutInMs: 100, retry: { timeout: { maxAttempts: 2, minTimeoutInMs: 300, randomize: false } } } });
    expect(await output(slow.id)).toMatchObject({ status: 200, body: "quick" });
    expect(slow.pauses).toEqual([300]);

    // A port nothing listens on: refused twice, then the error is the run's.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await runThroughPauses("fetcher", { path: "", url: `http://127.0.0.1:${port}/x`, init: { retry: { connectionError: { maxAttempts: 2, minTimeoutInMs: 200, randomize: false } } } });
    expect(refused.status).toBe("FAILED");
    expect(refused.pauses).toEqual([200]);
    expect((await getRunRow(te, refused.id)).error).toMatchObject({ name: "TypeError", message: "fetch failed" });
  });

  it("refuses bodyFilter, which svc does not support, before sending anything", async () => {
    const before = requests.length;
    const { id, status } = await runThroughPauses("fetcher", { path: "/filtered", init: { retry: { byStatus: { "4xx": { strategy: "backoff", bodyFilter: { error: ["x"] } } } } } });
    expect(status).toBe("FAILED");
    expect((await getRunRow(te, id)).error).toMatchObject({ message: expect.stringContaining("`bodyFilter` is not supported") });
    expect(requests.length).toBe(before);
  });

  it("is refused outside a run", async () => {
    await expect(retry.fetch(`${base}/x`)).rejects.toThrow(/retry\.fetch\(\) can only be called inside a task run/);
    await expect(retry.onThrow(async () => 1, {})).rejects.toThrow(/retry\.onThrow\(\) can only be called inside a task run/);
  });
});
