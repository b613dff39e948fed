import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { limitsFromConfig, parseApiConfig } from "../src/config.ts";
import { createUserWithPat } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";

/**
 * Failed sign-ins on the dashboard's form are throttled per client address and per token prefix,
 * with 429 and Retry-After; the clock is a fake one, so waiting is advancing it.
 */
const clock = new FakeClock(new Date("2026-04-01T09:00:00Z"));
const perMinute = (n: number) => ({ perSecond: n / 60, burst: n, maxAddresses: 1000 });
let api: TestApi;
let pat: string;

beforeAll(async () => {
  api = await startTestApi({ clock, limits: { loginRateLimit: { perAddress: perMinute(5), perTokenPrefix: perMinute(3) } } });
  pat = (await createUserWithPat(api, "throttle@example.com", { memberOf: [api.project.projectRef] })).pat;
});
afterAll(async () => api?.close());

const wrongToken = (n: number) => `svc_pat_${String(n).padStart(8, "0")}${"x".repeat(24)}`;

describe("dashboard sign-in throttle", () => {
  it("answers a sixth failed sign-in from one address within a minute with 429 and Retry-After, even with the right token", async () => {
    const browser = new DashboardBrowser(api.app, "10.1.0.1");
    for (let i = 0; i < 5; i++) expect((await browser.signIn(wrongToken(i))).statusCode).toBe(401);
    const limited = await browser.signIn(wrongToken(99));
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["retry-after"]).toBe("12");
    expect(limited.headers["content-type"]).toMatch(/^text\/html/);
    expect(limited.body).toContain("Too many failed sign-ins from this address: try again in 12 s.");
    expect((await browser.signIn(pat)).statusCode).toBe(429);
    // Another address is not held back; this one gets an attempt back after 12 s.
    expect((await new DashboardBrowser(api.app, "10.1.0.2").signIn(pat)).statusCode).toBe(303);
    clock.advance(12_000);
    expect((await browser.signIn(pat)).statusCode).toBe(303);
  });

  it("throttles guesses at one token prefix spread over many addresses", async () => {
    const prefixed = (n: number) => `svc_pat_abcdefgh${String(n).padStart(24, "0")}`;
    for (let i = 0; i < 3; i++) expect((await new DashboardBrowser(api.app, `10.2.0.${i}`).signIn(prefixed(i))).statusCode).toBe(401);
    const limited = await new DashboardBrowser(api.app, "10.2.0.50").signIn(prefixed(50));
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers["retry-after"])).toBe(20);
    expect(limited.body).toContain("Too many failed sign-ins with this token");
    // Other prefixes (the right token among them) pass.
    expect((await new DashboardBrowser(api.app, "10.2.0.51").signIn(pat)).statusCode).toBe(303);
  });

  it("counts malformed tokens as failures, and successful sign-ins not at all", async () => {
    const browser = () => new DashboardBrowser(api.app, "10.3.0.1");
    for (let i = 0; i < 10; i++) expect((await browser().signIn(pat)).statusCode).toBe(303);
    for (let i = 0; i < 5; i++) expect((await browser().signIn(`not-a-pat-${i}`)).statusCode).toBe(400);
    expect((await browser().signIn(pat)).statusCode).toBe(429);
  });

  it("is on by default in the API's configuration (10 per address, 5 per token prefix a minute); 0 turns a limit off", () => {
    const base = { DATABASE_URL: "postgres://x@localhost/db", SVC_ENCRYPTION_KEY: "0123456789abcdef" };
    expect(limitsFromConfig(parseApiConfig(base)).loginRateLimit).toEqual({
      perAddress: { perSecond: 10 / 60, burst: 10, maxAddresses: 50_000 },
      perTokenPrefix: { perSecond: 5 / 60, burst: 5, maxAddresses: 50_000 },
    });
    expect(limitsFromConfig(parseApiConfig({ ...base, LOGIN_ATTEMPTS_PER_MINUTE: "0" })).loginRateLimit?.perAddress).toBeNull();
    expect(limitsFromConfig(parseApiConfig({ ...base, LOGIN_ATTEMPTS_PER_MINUTE: "0", LOGIN_ATTEMPTS_PER_TOKEN_PER_MINUTE: "0" })).loginRateLimit).toBeNull();
  });
});
