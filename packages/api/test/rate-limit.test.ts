import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AddressRateLimiter } from "../src/http/rate-limit.ts";
import { parseApiConfig, limitsFromConfig } from "../src/config.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";

const clock = new FakeClock(new Date("2026-03-01T12:00:00Z"));
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ clock, limits: { publicRateLimit: { perSecond: 1, burst: 2, maxAddresses: 100 } } });
});
afterAll(async () => api?.close());

const fromAddress = (remoteAddress: string, url: string, method: "GET" | "POST" | "PUT" = "GET") =>
  api.app.inject({ method, url, remoteAddress, ...(method === "GET" ? {} : { payload: {} }) });

describe("the public rate limit", () => {
  it("answers a client over its limit on routes without credentials with 429, Retry-After and { error }", async () => {
    const callback = "/api/v1/waitpoints/tokens/waitpoint_nope/callback/abc";
    expect((await fromAddress("10.0.0.1", callback, "POST")).statusCode).toBe(404);
    expect((await fromAddress("10.0.0.1", "/api/v1/packets/download/a.b")).statusCode).toBe(404);
    const limited = await fromAddress("10.0.0.1", "/api/v1/packets/upload/env_x.y", "PUT");
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["retry-after"]).toBe("1");
    expect(limited.json()).toEqual({ error: "Too many requests from 10.0.0.1: retry in 1 s" });
    // Another address has its own bucket; the same one gets a token back after a second.
    expect((await fromAddress("10.0.0.2", callback, "POST")).statusCode).toBe(404);
    clock.advance(1000);
    expect((await fromAddress("10.0.0.1", callback, "POST")).statusCode).toBe(404);
    expect((await fromAddress("10.0.0.1", callback, "POST")).statusCode).toBe(429);
  });

  it("leaves routes with credentials alone", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await api.app.inject({ method: "GET", url: "/api/v1/waitpoints/tokens", headers: api.devAuth, remoteAddress: "10.0.0.3" });
      expect(res.statusCode).toBe(200);
    }
  });

  it("is on by default in the API's configuration, and 0 turns it off", () => {
    const base = { DATABASE_URL: "postgres://x@localhost/db", SVC_ENCRYPTION_KEY: "0123456789abcdef" };
    expect(limitsFromConfig(parseApiConfig(base)).publicRateLimit).toEqual({ perSecond: 50, burst: 100, maxAddresses: 50_000 });
    expect(limitsFromConfig(parseApiConfig({ ...base, RATE_LIMIT_PUBLIC_PER_SECOND: "0" })).publicRateLimit).toBeNull();
  });
});

describe("AddressRateLimiter", () => {
  it("remembers at most maxAddresses, forgetting the least recently seen", () => {
    const limiter = new AddressRateLimiter({ perSecond: 1, burst: 1, maxAddresses: 3 }, clock);
    for (const address of ["a", "b", "c"]) expect(limiter.take(address)).toBe(0);
    expect(limiter.take("a")).toBe(1); // seen again: now the most recent
    for (let i = 0; i < 1000; i++) limiter.take(`x${i}`);
    expect(limiter.size).toBe(3);
  });

  it("says how long to wait at a slow rate", () => {
    const limiter = new AddressRateLimiter({ perSecond: 0.1, burst: 1, maxAddresses: 10 }, clock);
    expect(limiter.take("a")).toBe(0);
    expect(limiter.take("a")).toBe(10);
    clock.advance(10_000);
    expect(limiter.take("a")).toBe(0);
  });
});
