import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import { startAppWithDatabaseDown, startTestApi, type TestApi } from "./harness.ts";

// The API's routes, with their pool pointing at a port nothing listens on: Postgres is down.
// (The whole restart, with real processes, is packages/worker/test/postgres-restart.test.ts.)
let api: TestApi;
let down: FastifyInstance;
let closeDown: () => Promise<void>;

beforeAll(async () => {
  api = await startTestApi();
  ({ app: down, close: closeDown } = await startAppWithDatabaseDown(api));
});
afterAll(async () => {
  await closeDown?.();
  await api?.close();
});

describe("while the database cannot be reached", () => {
  const requests: [string, string, unknown?][] = [
    ["GET", "/api/v3/runs/run_1234567890abcdefghijk"],
    ["GET", "/api/v1/runs"],
    ["POST", "/api/v1/tasks/hello/trigger", { payload: {} }],
    ["POST", "/api/v1/waitpoints/tokens", {}],
    ["GET", "/api/v1/schedules"],
  ];
  for (const [method, url, body] of requests) {
    it(`${method} ${url} answers 503 with Retry-After and a JSON error`, async () => {
      const response = await down.inject({ method: method as "GET", url, headers: { ...api.devAuth, ...(body ? { "content-type": "application/json" } : {}) }, ...(body ? { payload: JSON.stringify(body) } : {}) });
      expect(response.statusCode).toBe(503);
      expect(response.headers["retry-after"]).toBe("1");
      expect(response.headers["x-should-retry"]).toBe("true");
      expect(response.json()).toEqual({ error: expect.stringContaining("database") });
    });
  }

  it("/readyz answers 503, /healthz (the process is alive) 200", async () => {
    const ready = await down.inject({ method: "GET", url: "/readyz" });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ ok: false, error: expect.stringContaining("database unreachable") });
    expect((await down.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
  });

  it("still refuses a bad request for what it is (400), without the database", async () => {
    const response = await down.inject({ method: "POST", url: "/api/v1/tasks/hello/trigger", headers: { ...api.devAuth, "content-type": "application/json" }, payload: "{not json" });
    expect(response.statusCode).toBe(400);
  });
});
