import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "@svc/runtime/engine";
import { createTokenOk } from "./waitpoints-helpers.ts";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

/** `levels` nested arrays around a number: ~10 KB of text for 5,000 levels. */
const deep = (levels: number) => "[".repeat(levels) + "1" + "]".repeat(levels);
const tooDeep = new RegExp(`nested more than ${MAX_JSON_DEPTH} levels deep`);

function post(url: string, payload: string, contentType = "application/json", headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url, headers: { ...headers, "content-type": contentType }, payload });
}

describe("deeply nested JSON", () => {
  it("is refused with 400 on every body, wherever the nesting sits", async () => {
    const bodies: [string, string][] = [
      ["/api/v1/tasks/hello/trigger", `{"payload":${deep(5000)}}`],
      ["/api/v1/tasks/hello/trigger", `{"payload":{},"options":{"metadata":{"a":${deep(5000)}}}}`],
      ["/api/v2/tasks/batch", `{"items":[{"task":"hello","payload":${deep(5000)}}]}`],
      ["/api/v1/waitpoints/tokens", `{"tags":${deep(5000)}}`],
    ];
    for (const [url, body] of bodies) {
      const res = await post(url, body);
      expect(res.statusCode, `${url} ${res.body}`).toBe(400);
      expect(res.json().error).toMatch(tooDeep);
    }
  });

  it("is refused in an NDJSON batch line, naming the line", async () => {
    const batch = await api.app.inject({ method: "POST", url: "/api/v3/batches", headers: api.devAuth, payload: { runCount: 2 } });
    const lines = `{"index":0,"task":"hello"}\n{"index":1,"task":"hello","payload":${deep(5000)}}\n`;
    const res = await post(`/api/v3/batches/${batch.json().id}/items`, lines, "application/x-ndjson");
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toMatch(new RegExp(`^line 2: .*${tooDeep.source}`));
  });

  it("is refused inside a payload sent as JSON or superjson text (what the SDK sends)", async () => {
    for (const [payload, payloadType] of [[deep(5000), "application/json"], [`{"json":${deep(5000)}}`, "application/super+json"]]) {
      const res = await post("/api/v1/tasks/hello/trigger", JSON.stringify({ payload, options: { payloadType } }));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toMatch(tooDeep);
    }
  });

  it("is refused by a token's callback URL whatever the content type", async () => {
    const token = await createTokenOk(api);
    const path = new URL(token.url).pathname;
    for (const type of ["application/json", "text/plain", "application/x-www-form-urlencoded"]) {
      const res = await post(path, deep(5000), type, {});
      expect(res.statusCode, `${type} ${res.body}`).toBe(400);
      expect(res.json().error).toMatch(tooDeep);
    }
  });

  it(`accepts ${MAX_JSON_DEPTH - 2} levels of payload in a trigger body`, async () => {
    const res = await post("/api/v1/tasks/hello/trigger", `{"payload":${deep(MAX_JSON_DEPTH - 1)}}`);
    expect(res.statusCode, res.body).toBe(200);
  });
});
