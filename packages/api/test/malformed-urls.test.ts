// Errors the router raises before a route runs still answer with a clear `{ error }`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

describe("malformed URLs", () => {
  it("answer a broken %-escape with 400 and say so", async () => {
    const res = await api.app.inject({ method: "GET", url: "/api/v3/runs/%E0%A4%A", headers: api.devAuth });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: "Malformed URL: /api/v3/runs/%E0%A4%A is not valid percent-encoding" });
  });

  it("answer an over-long path segment with 414 and say so", async () => {
    const res = await api.app.inject({ method: "GET", url: `/api/v3/runs/${"x".repeat(3000)}`, headers: api.devAuth });
    expect(res.statusCode).toBe(414);
    expect(res.json().error).toMatch(/^A path segment of \/api\/v3\/runs\/x+… is longer than 2048 characters$/);
    expect(Object.keys(res.json())).toEqual(["error"]);
  });
});
