import { createServer, type Server } from "node:http";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, connectTestEngine, type TestDatabase } from "@svc/runtime/testing";
import { startTracing } from "@svc/runtime/engine";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { spawnApi, spawnWorker, type ServiceProcess } from "./processes.ts";

// OpenTelemetry traces from real processes: an API and a worker export OTLP/HTTP (JSON) to a
// receiver this test runs. A trigger carrying a client's traceparent yields one trace: the HTTP
// span, the run's attempts under it, their steps and waits, the resumed attempt linked to the
// wait it resumed from, and the child run's attempt under the parent's.
const FIXTURE = fileURLToPath(new URL("./fixtures/traces/svc.config.ts", import.meta.url));

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  links?: { traceId: string; spanId: string }[];
  attributes?: { key: string; value: { stringValue?: string; intValue?: string | number; boolValue?: boolean } }[];
  service: string;
}

/** An OTLP/HTTP receiver: keeps every span POSTed to /v1/traces. */
async function startReceiver(): Promise<{ server: Server; url: string; spans: ReceivedSpan[] }> {
  const spans: ReceivedSpan[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      const parsed = JSON.parse(body) as { resourceSpans: { resource: { attributes: ReceivedSpan["attributes"] }; scopeSpans: { spans: Omit<ReceivedSpan, "service">[] }[] }[] };
      for (const rs of parsed.resourceSpans) {
        const service = rs.resource.attributes?.find((a) => a.key === "service.name")?.value.stringValue ?? "";
        for (const ss of rs.scopeSpans) for (const span of ss.spans) spans.push({ ...span, service });
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { server, url: `http://127.0.0.1:${port}`, spans };
}

const attr = (span: ReceivedSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value?.stringValue ?? value?.boolValue ?? (value?.intValue !== undefined ? Number(value.intValue) : undefined);
};

let db: TestDatabase;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let api: ServiceProcess;
let worker: ServiceProcess;
let base: string;
let secretKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const { project } = await connectTestEngine(db);
  secretKey = project.environments.dev.secretKey;
  receiver = await startReceiver();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "100" };
  api = spawnApi(db.url, port, { SERVICE_API_URL: base, ...otel });
  worker = spawnWorker(db.url, secretKey, FIXTURE, { SERVICE_API_URL: base, ...otel });
  await Promise.all([api.ready, worker.ready]);
}, 120_000);

afterAll(async () => {
  for (const p of [api, worker]) p?.child.kill("SIGKILL");
  await Promise.all([api?.exited, worker?.exited]);
  await new Promise((resolve) => receiver?.server.close(resolve));
  await db?.drop();
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(base + path, { method, headers: { authorization: `Bearer ${secretKey}`, "content-type": "application/json", ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

async function until<T>(check: () => T | undefined | Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const found = await check();
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const runStatus = async (id: string) => (await call("GET", `/api/v3/runs/${id}`)).body.status as string;

describe("OpenTelemetry traces", () => {
  it("carries a trigger's trace into the run's attempts, steps, waits, resumes and child runs", async () => {
    const clientTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const clientSpanId = "00f067aa0ba902b7";
    const token = await call("POST", "/api/v1/waitpoints/tokens", {});
    expect(token.status).toBe(200);
    const triggered = await call("POST", "/api/v1/tasks/traced-parent/trigger", { payload: { tokenId: token.body.id } }, { traceparent: `00-${clientTraceId}-${clientSpanId}-01` });
    expect(triggered.status).toBe(200);
    const runId = triggered.body.id as string;
    await until(async () => ((await runStatus(runId)) === "WAITING" ? true : undefined), "the run to wait for the token");
    expect((await call("POST", `/api/v1/waitpoints/tokens/${token.body.id}/complete`, { data: { n: 1 } })).status).toBe(200);
    await until(async () => ((await runStatus(runId)) === "COMPLETED" ? true : undefined), "the run to complete");
    const output = (await call("GET", `/api/v3/runs/${runId}`)).body.output;
    expect(output).toEqual({ prepared: 41, child: 2 });

    const spans = receiver.spans;
    const named = (name: string) => spans.filter((s) => s.name === name);
    // The parent's last attempt (after the child) and the child's step are among the last spans exported.
    await until(() => (named("attempt traced-parent").length >= 3 && named("step child-work").length >= 1 ? true : undefined), "the spans of every attempt");

    const trigger = named("POST /api/v1/tasks/:taskId/trigger")[0]!;
    expect(trigger).toMatchObject({ traceId: clientTraceId, parentSpanId: clientSpanId, service: "svc-api", kind: 2 });
    expect(attr(trigger, "http.route")).toBe("/api/v1/tasks/:taskId/trigger");
    expect(attr(trigger, "http.response.status_code")).toBe(200);

    const attempts = named("attempt traced-parent").filter((s) => attr(s, "svc.run.id") === runId);
    expect(attempts).toHaveLength(3);
    for (const attempt of attempts) expect(attempt).toMatchObject({ traceId: clientTraceId, parentSpanId: trigger.spanId, service: "svc-worker" });
    const first = attempts.find((a) => attr(a, "svc.run.resumed") === false)!;
    expect(attr(first, "svc.attempt.outcome")).toBe("suspended");

    const step = named("step prepare")[0]!;
    expect(step).toMatchObject({ traceId: clientTraceId, parentSpanId: first.spanId });
    const tokenWait = named("wait token")[0]!;
    expect(tokenWait).toMatchObject({ traceId: clientTraceId, parentSpanId: first.spanId });
    expect(attr(tokenWait, "svc.wait.target")).toBe(token.body.id);
    expect(attr(tokenWait, "svc.wait.suspended")).toBe(true);

    // The attempt that resumed after the token links to the token's wait; it waits on the child in turn.
    const afterToken = attempts.find((a) => a.links?.some((l) => l.spanId === tokenWait.spanId))!;
    expect(afterToken).toBeDefined();
    expect(attr(afterToken, "svc.run.resumed")).toBe(true);
    expect(afterToken.links![0]!.traceId).toBe(clientTraceId);
    const childWait = named("wait child")[0]!;
    expect(childWait).toMatchObject({ traceId: clientTraceId, parentSpanId: afterToken.spanId });
    const last = attempts.find((a) => a.links?.some((l) => l.spanId === childWait.spanId))!;
    expect(attr(last, "svc.attempt.outcome")).toBe("returned");

    // The child run: in the parent's trace, under the attempt that triggered it.
    const child = named("attempt traced-child")[0]!;
    expect(child).toMatchObject({ traceId: clientTraceId, parentSpanId: afterToken.spanId });
    expect(named("step child-work")[0]).toMatchObject({ traceId: clientTraceId, parentSpanId: child.spanId });
  });

  it("puts a batch's runs under the batch request's span", async () => {
    const traceId = "5bf92f3577b34da6a3ce929d0e0e4737";
    const res = await call("POST", "/api/v2/tasks/batch", { items: [{ task: "traced-child", payload: { n: 10 } }, { task: "traced-child", payload: { n: 20 } }] }, { traceparent: `00-${traceId}-00f067aa0ba902b8-01` });
    expect(res.status).toBe(202);
    const runIds = res.body.runs as string[];
    const attempts = await until(() => {
      const found = receiver.spans.filter((s) => s.name === "attempt traced-child" && runIds.includes(attr(s, "svc.run.id") as string));
      return found.length === 2 ? found : undefined;
    }, "the batch's attempts");
    // The API process exports its request span on its own schedule: it may arrive after the attempts.
    const request = await until(() => receiver.spans.find((s) => s.name === "POST /api/v2/tasks/batch" && s.traceId === traceId), "the batch request's span");
    expect(request).toMatchObject({ parentSpanId: "00f067aa0ba902b8" });
    for (const attempt of attempts) expect(attempt).toMatchObject({ traceId, parentSpanId: request.spanId });
  });

  it("puts a run that task code triggers through the HTTP client in the calling run's trace", async () => {
    const traceId = "6bf92f3577b34da6a3ce929d0e0e4738";
    const res = await call("POST", "/api/v1/tasks/traced-caller/trigger", { payload: {} }, { traceparent: `00-${traceId}-00f067aa0ba902b9-01` });
    expect(res.status).toBe(200);
    const callerId = res.body.id as string;
    await until(async () => ((await runStatus(callerId)) === "COMPLETED" ? true : undefined), "the caller to complete");
    const childId = (await call("GET", `/api/v3/runs/${callerId}`)).body.output as string;
    const spans = await until(() => {
      const caller = receiver.spans.find((s) => s.name === "attempt traced-caller" && attr(s, "svc.run.id") === callerId);
      const child = receiver.spans.find((s) => s.name === "attempt traced-child" && attr(s, "svc.run.id") === childId);
      return caller && child ? { caller, child } : undefined;
    }, "the caller's and the child's attempts");
    expect(spans.caller.traceId).toBe(traceId);
    // The child's trigger request is a span under the caller's attempt; the child's attempt is under that request.
    const request = receiver.spans.find((s) => s.name === "POST /api/v1/tasks/:taskId/trigger" && s.parentSpanId === spans.caller.spanId)!;
    expect(request).toMatchObject({ traceId, service: "svc-api" });
    expect(spans.child).toMatchObject({ traceId, parentSpanId: request.spanId });
  });

  it("traces nothing from a process without OTEL_EXPORTER_OTLP_ENDPOINT", async () => {
    const port = await freePort();
    const off = spawnApi(db.url, port, { SERVICE_API_URL: `http://127.0.0.1:${port}`, OTEL_SERVICE_NAME: "svc-off", OTEL_BSP_SCHEDULE_DELAY: "100" });
    try {
      await off.ready;
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/tasks/no-such-task/trigger`, {
        method: "POST",
        headers: { authorization: `Bearer ${secretKey}`, "content-type": "application/json", traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
        body: JSON.stringify({ payload: {} }),
      });
      expect(res.status).toBe(200);
      const { id } = (await res.json()) as { id: string };
      // No span was made, so none is stored for the run's attempts to hang under.
      const { rows } = await db.pool.query(`SELECT traceparent, wait_traceparent FROM runs WHERE id = $1`, [id]);
      expect(rows[0]).toEqual({ traceparent: null, wait_traceparent: null });
      // Shut down cleanly (its exporter, had one started, would flush now): nothing of it reached the receiver.
      off.child.kill("SIGTERM");
      expect(await off.exited).toBe(0);
      expect(receiver.spans.filter((s) => s.service === "svc-off")).toEqual([]);
    } finally {
      off.child.kill("SIGKILL");
    }
  });

  it("starts no exporter without OTEL_EXPORTER_OTLP_ENDPOINT", async () => {
    expect(await startTracing({}, "svc-worker")).toBeNull();
    expect(await startTracing({ OTEL_SERVICE_NAME: "x", OTEL_BSP_SCHEDULE_DELAY: "100" }, "svc-worker")).toBeNull();
    const on = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, "svc-worker");
    expect(on).not.toBeNull();
    await on!.shutdown();
  });
});
