import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { getEnvironment, type Environment } from "@svc/runtime/engine";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { limitsFromConfig, parseApiConfig } from "../src/config.ts";
import { limitsOf } from "../src/http/limits.ts";
import { bearer } from "./credentials-fixtures.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { createSessionOk } from "./sessions-helpers.ts";

/**
 * Public tokens hold a bounded number of session channel subscriptions (SSE) open at once, per
 * token and per client address; past either, a 429 with Retry-After. Secret keys are not counted.
 */
let api: TestApi;
let env: Environment;
let session: { id: string };
const open: { destroy(): void }[] = [];

beforeAll(async () => {
  api = await startTestApi({ limits: { subscriptions: { perPublicToken: 2, perAddress: 3 } } });
  env = (await getEnvironment(api.db.pool, api.project.environments.dev.id))!;
  session = await createSessionOk(api);
});
afterAll(async () => {
  for (const stream of open) stream.destroy();
  await api?.close();
});

/** A token of its own: tokens minted in the same second with the same scopes are the same JWT. */
const token = (extra: string) => mintPublicToken(api.deps, env, [`read:sessions:${session.id}`, `read:tasks:${extra}`]);

/** Opens a subscription from `address` and keeps it open; the answer's status and headers, and a way to hang up. */
async function subscribe(headers: Record<string, string>, address: string) {
  const res = await api.app.inject({ method: "GET", url: `/realtime/v1/sessions/${session.id}/out`, headers: { ...headers, "timeout-seconds": "600" }, remoteAddress: address, payloadAsStream: true });
  const stream = { destroy: () => res.raw.res.destroy() };
  if (res.statusCode === 200) open.push(stream);
  const body = res.statusCode === 200 ? "" : await new Response(res.stream() as unknown as ReadableStream).text();
  return { status: res.statusCode, headers: res.headers, body, hangUp: stream.destroy };
}

describe("open subscriptions of public tokens", () => {
  it("refuses a token's third open subscription, then an address's fourth, with 429 and Retry-After; secret keys are not counted", async () => {
    const a = bearer(await token("a"));
    const b = bearer(await token("b"));
    const first = await subscribe(a, "10.9.0.1");
    expect(first.status).toBe(200);
    expect((await subscribe(a, "10.9.0.1")).status).toBe(200);
    const byToken = await subscribe(a, "10.9.0.2");
    expect(byToken.status).toBe(429);
    expect(byToken.headers["retry-after"]).toBe("5");
    expect(JSON.parse(byToken.body)).toEqual({ error: "Too many open subscriptions: this token may hold at most 2 at once; close one or retry in 5 s" });

    expect((await subscribe(b, "10.9.0.1")).status).toBe(200);
    const byAddress = await subscribe(b, "10.9.0.1");
    expect(byAddress.status).toBe(429);
    expect(JSON.parse(byAddress.body).error).toBe("Too many open subscriptions: public tokens from 10.9.0.1 may hold at most 3 at once; close one or retry in 5 s");
    expect((await subscribe(b, "10.9.0.2")).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await subscribe(api.devAuth, "10.9.0.1")).status).toBe(200);

    // Hanging up gives the subscription back.
    const counter = limitsOf(api.app).subscriptions;
    expect(counter.open).toBe(4);
    first.hangUp();
    await vi.waitFor(() => expect(counter.open).toBe(3));
    expect((await subscribe(a, "10.9.0.3")).status).toBe(200);
  });

  it("has documented defaults in the API's configuration (10 per token, 100 per address); 0 lifts a limit", () => {
    const base = { DATABASE_URL: "postgres://x@localhost/db", SVC_ENCRYPTION_KEY: "0123456789abcdef" };
    expect(limitsFromConfig(parseApiConfig(base)).subscriptions).toEqual({ perPublicToken: 10, perAddress: 100 });
    expect(limitsFromConfig(parseApiConfig({ ...base, SSE_SUBSCRIPTIONS_PER_TOKEN: "0", SSE_SUBSCRIPTIONS_PER_ADDRESS: "7" })).subscriptions).toEqual({ perPublicToken: null, perAddress: 7 });
  });

  it("documents the 429 of the subscription in the OpenAPI document", async () => {
    const document = (await api.app.inject({ method: "GET", url: "/api/openapi.json" })).json();
    expect(document.paths["/realtime/v1/sessions/{session}/{io}"].get.responses["429"]).toEqual({ $ref: "#/components/responses/TooManyRequests" });
  });
});
