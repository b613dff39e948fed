// The transport on the wire: headers, retries, error mapping. A small recording HTTP server stands in
// for the API here, because the real one never answers 5xx or 429 on purpose.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  ApiClient,
  ApiConnectionError,
  ApiResponseError,
  ConflictError,
  InternalServerError,
  PermissionDeniedError,
  RateLimitError,
} from "../src/index.ts";

interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}
interface Reply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

let server: Server;
let baseURL: string;
let recorded: Recorded[] = [];
let replies: Reply[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      recorded.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const reply = replies.shift() ?? { status: 200, body: "{}" };
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      res.end(reply.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  recorded = [];
  replies = [];
});

const fastRetry = (maxAttempts = 3) => ({ retry: { maxAttempts, minTimeoutInMs: 1, maxTimeoutInMs: 5, randomize: false } });
const json = (status: number, value: unknown, headers?: Record<string, string>): Reply => ({ status, body: JSON.stringify(value), headers });

describe("request headers", () => {
  it("sends the credential, both branch headers, the API version and a JSON body", async () => {
    const client = new ApiClient({ baseURL: `${baseURL}/`, secretKey: "svc_preview_abc", previewBranch: "feat-1" });
    replies.push(json(200, { id: "run_1", isCached: false }));
    await client.tasks.trigger("my/task", { a: 1 }, { idempotencyKey: "k", queue: "q" });
    const [request] = recorded;
    expect(request).toMatchObject({ method: "POST", url: "/api/v1/tasks/my%2Ftask/trigger" });
    expect(request!.headers).toMatchObject({
      authorization: "Bearer svc_preview_abc",
      "x-service-branch": "feat-1",
      "x-trigger-branch": "feat-1",
      "x-trigger-api-version": "2025-07-16",
      "content-type": "application/json",
    });
    expect(JSON.parse(request!.body)).toEqual({
      payload: '{"a":1}',
      options: { payloadType: "application/json", idempotencyKey: "k", idempotencyKeyOptions: { key: "k" }, queue: { name: "q" } },
    });
  });

  it("never lets additionalHeaders replace the client's own, and sends no branch headers without a branch", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_real", requestOptions: { additionalHeaders: { Authorization: "Bearer fake", "x-extra": "1" } } });
    await client.runs.cancel("run_1");
    expect(recorded[0]!.headers).toMatchObject({ authorization: "Bearer svc_dev_real", "x-extra": "1" });
    expect(recorded[0]!.headers).not.toHaveProperty("x-service-branch");
    expect(recorded[0]!.headers).not.toHaveProperty("content-type");
  });

  it("encodes list filters Trigger.dev's way", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_x" });
    replies.push(json(200, { data: [], pagination: {} }));
    await client.runs.list("proj_1", { env: ["prod"], status: ["QUEUED", "FAILED"], from: new Date(1000), limit: 5 });
    const url = new URL(recorded[0]!.url, baseURL);
    expect(url.pathname).toBe("/api/v1/projects/proj_1/runs");
    expect(Object.fromEntries(url.searchParams)).toEqual({
      "filter[env]": "prod",
      "filter[status]": "QUEUED,FAILED",
      "filter[createdAt][from]": "1000",
      "page[size]": "5",
    });
  });
});

describe("retries", () => {
  it("retries a 503 and keeps one request-idempotency key for the logical call", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_x", requestOptions: fastRetry() });
    replies.push(json(503, { error: "busy" }), json(200, { id: "run_9", isCached: false }));
    expect((await client.tasks.trigger("t", 1)).id).toBe("run_9");
    expect(recorded).toHaveLength(2);
    const keys = recorded.map((r) => r.headers["x-trigger-request-idempotency-key"]);
    expect(keys[0]).toBeTypeOf("string");
    expect(keys[1]).toBe(keys[0]);
    await client.tasks.trigger("t", 2);
    expect(recorded[2]!.headers["x-trigger-request-idempotency-key"]).not.toBe(keys[0]);
  });

  it("gives up after maxAttempts with InternalServerError carrying the server's message", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_x", requestOptions: fastRetry(3) });
    replies.push(json(500, { error: "a" }), json(500, { error: "b" }), json(500, { error: { message: "c" } }));
    const error = await client.runs.retrieve("run_1").catch((e) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect(error).toMatchObject({ status: 500, message: "c" });
    expect(recorded).toHaveLength(3);
  });

  it("does not retry when the server says x-should-retry: false, nor on a plain 4xx", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_x", requestOptions: fastRetry() });
    replies.push(json(409, { error: "taken" }, { "x-should-retry": "false" }));
    await expect(client.runs.replay("run_1")).rejects.toBeInstanceOf(ConflictError);
    replies.push(json(403, { error: "Unauthorized", code: "unauthorized" }));
    await expect(client.runs.retrieve("run_1")).rejects.toBeInstanceOf(PermissionDeniedError);
    expect(recorded).toHaveLength(2);
  });

  it("retries a 429 after retry-after and surfaces RateLimitError when it persists", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_x", requestOptions: fastRetry(2) });
    replies.push(json(429, { error: "slow down" }, { "retry-after": "0" }), json(429, { error: "slow down" }, { "retry-after": "0" }));
    await expect(client.runs.retrieve("run_1")).rejects.toBeInstanceOf(RateLimitError);
    expect(recorded).toHaveLength(2);
  });

  it("retries connection failures, then throws ApiConnectionError", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    let calls = 0;
    const countingFetch: typeof fetch = (input, init) => {
      calls += 1;
      return fetch(input, init);
    };
    const client = new ApiClient({ baseURL: `http://127.0.0.1:${port}`, secretKey: "svc_dev_x", requestOptions: { ...fastRetry(3), fetch: countingFetch } });
    const error = await client.runs.retrieve("run_1").catch((e) => e);
    expect(error).toBeInstanceOf(ApiConnectionError);
    expect(error.status).toBeUndefined();
    expect(calls).toBe(3);
  });
});

describe("responses", () => {
  it("rejects a 2xx body that is not JSON", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_x" });
    replies.push({ status: 200, body: "<html>", headers: { "content-type": "text/html" } });
    await expect(client.runs.retrieve("run_1")).rejects.toBeInstanceOf(ApiResponseError);
  });

  it("self-signs the trigger token from x-trigger-jwt-claims when the server sends no ready JWT", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_signing" });
    replies.push(json(200, { id: "run_5", isCached: false }, { "x-trigger-jwt-claims": JSON.stringify({ sub: "env_1", pub: true }) }));
    const handle = await client.tasks.trigger("t", {});
    const claims = JSON.parse(Buffer.from(handle.publicAccessToken!.split(".")[1]!, "base64url").toString("utf8"));
    expect(claims).toMatchObject({ sub: "env_1", pub: true, scopes: ["read:runs:run_5"] });
  });

  it("parses a retrieved token's serialized output by its outputType and reports a timeout as error", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_x" });
    const base = { id: "waitpoint_1", url: "u", tags: [], createdAt: new Date(0).toISOString() };
    replies.push(json(200, { ...base, status: "COMPLETED", output: '{"a":1}', outputType: "application/json" }));
    expect((await client.waitpoints.retrieveToken("waitpoint_1")).output).toEqual({ a: 1 });
    replies.push(json(200, { ...base, status: "TIMED_OUT", output: '{"message":"timed out at noon"}', outputIsError: true }));
    const timedOut = await client.waitpoints.retrieveToken("waitpoint_1");
    expect(timedOut.error).toMatchObject({ name: "WaitpointTimeoutError", message: "timed out at noon" });
    expect(timedOut).not.toHaveProperty("output");
  });

  it("sends `{ data }` to complete a token, as Trigger.dev servers expect", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_x" });
    replies.push(json(200, { success: true }));
    await client.waitpoints.completeToken({ id: "waitpoint_1" }, { ok: 1 });
    expect(JSON.parse(recorded[0]!.body)).toEqual({ data: { ok: 1 } });
  });
});

describe("validating run objects", () => {
  const at = new Date(0).toISOString();
  const run = {
    id: "run_1", status: "COMPLETED", taskIdentifier: "t", isQueued: false, isExecuting: false, isWaiting: false, isCompleted: true,
    isSuccess: true, isFailed: false, isCancelled: false, isTest: false, createdAt: at, updatedAt: at, tags: [], costInCents: 0,
    baseCostInCents: 0, durationMs: 0,
  };
  const retrieved = { ...run, depth: 0, triggerFunction: "trigger", relatedRuns: {}, attemptCount: 1, attempts: [], output: { a: 1 }, waitingFor: [] };

  it("names the field of a run object that does not match the contract", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_x" });
    replies.push(json(200, { ...retrieved, status: "SOMETHING_NEW" }));
    const error = await client.runs.retrieve("run_1").catch((e) => e);
    expect(error).toBeInstanceOf(ApiResponseError);
    expect(error.message).toMatch(/^GET \/api\/v3\/runs\/run_1: unexpected response: status: /);
    replies.push(json(200, { data: [{ ...run, env: { id: "env_1", name: "dev" }, waitingFor: [], createdAt: null }], pagination: {} }));
    await expect(client.runs.list()).rejects.toThrow(/data\[0\]\.createdAt: /);
    replies.push(json(200, { ...retrieved, relatedRuns: { parent: { ...retrieved, startedAt: "yesterday" } } }));
    await expect(client.runs.retrieve("run_1")).rejects.toThrow(/relatedRuns\.parent\.startedAt: Invalid date-time/);
  });

  it("accepts and drops fields a newer server adds, and revives dates", async () => {
    const client = new ApiClient({ baseURL, secretKey: "svc_dev_x" });
    const waitingFor = [{ type: "DATETIME", id: "waitpoint_1", resumeAt: new Date(60_000).toISOString(), newField: 3 }];
    replies.push(json(200, { ...retrieved, newField: 1, relatedRuns: { children: [{ ...retrieved, newField: 2 }] }, waitingFor }));
    const got = await client.runs.retrieve("run_1");
    expect(got).not.toHaveProperty("newField");
    expect(got.relatedRuns.children![0]).not.toHaveProperty("newField");
    expect(got.createdAt).toEqual(new Date(0));
    expect(got.waitingFor).toEqual([{ type: "DATETIME", id: "waitpoint_1", resumeAt: new Date(60_000) }]);
    expect(got.output).toEqual({ a: 1 });
  });
});
