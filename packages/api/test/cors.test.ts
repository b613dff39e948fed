// Browsers holding a public access token call the API cross-origin: preflights are answered and
// responses carry CORS headers (Trigger.dev's routes do the same), except on a token's callback URL.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const ORIGIN = "https://app.example.com";

describe("CORS", () => {
  it("answers a preflight for a trigger from any origin, allowing the headers the page asks for", async () => {
    const res = await api.app.inject({
      method: "OPTIONS",
      url: "/api/v1/tasks/hello-world/trigger",
      headers: { origin: ORIGIN, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers["access-control-allow-origin"]).toBe("*");
    expect(String(res.headers["access-control-allow-methods"])).toContain("POST");
    expect(res.headers["access-control-allow-headers"]).toBe("authorization,content-type");
  });

  it("lets a page read the response and the public token header of a trigger", async () => {
    const res = await api.app.inject({
      method: "POST",
      url: "/api/v1/tasks/hello-world/trigger",
      headers: { ...api.devAuth, origin: ORIGIN, "content-type": "application/json" },
      payload: { payload: { name: "Ada" } },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBe("*");
    expect(String(res.headers["access-control-expose-headers"])).toContain("x-trigger-jwt");
    // Stream subscriptions in a browser tell the event format by it (test/streams-browser.test.ts).
    expect(String(res.headers["access-control-expose-headers"])).toContain("x-stream-version");
    expect(res.headers["x-trigger-jwt"]).toBeTypeOf("string");
  });

  it("still refuses a cross-origin request without a credential", async () => {
    const res = await api.app.inject({ method: "GET", url: "/api/v1/runs", headers: { origin: ORIGIN } });
    expect(res.statusCode).toBe(401);
    expect(res.headers["access-control-allow-origin"]).toBe("*");
  });

  it("gives a token's callback URL no CORS headers", async () => {
    const preflight = await api.app.inject({
      method: "OPTIONS",
      url: "/api/v1/waitpoints/tokens/waitpoint_x/callback/abc",
      headers: { origin: ORIGIN, "access-control-request-method": "POST" },
    });
    expect(preflight.headers["access-control-allow-origin"]).toBeUndefined();
    const post = await api.app.inject({ method: "POST", url: "/api/v1/waitpoints/tokens/waitpoint_x/callback/abc", headers: { origin: ORIGIN }, payload: {} });
    expect(post.headers["access-control-allow-origin"]).toBeUndefined();
  });
});
