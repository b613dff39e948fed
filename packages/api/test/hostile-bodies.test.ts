import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

function post(url: string, payload: string, contentType = "application/json", headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url, headers: { ...headers, "content-type": contentType }, payload });
}

describe("a JSON body that is not an object", () => {
  it("is a 400 that says what arrived, not a 415", async () => {
    for (const [body, got] of [['"AAA"', "a string"], ["[1,2]", "an array"], ["42", "a number"], ["true", "a boolean"], ["null", "null"]] as const) {
      const res = await post("/api/v1/tasks/hello/trigger", body);
      expect(res.statusCode, body).toBe(400);
      expect(res.json().error).toBe(`Request body must be a JSON object, got ${got}`);
    }
    const replay = await post("/api/v1/runs/run_nope/replay", '"AAA"');
    expect(replay.statusCode).toBe(400);
    expect(replay.json().error).toBe("Request body must be a JSON object, got a string");
  });

  it("still gets 415 when it is not JSON at all", async () => {
    const res = await post("/api/v1/tasks/hello/trigger", '{"payload":1}', "text/plain");
    expect(res.statusCode).toBe(415);
    expect(res.json().error).toBe("Content-Type must be application/json (got text/plain)");
  });
});

describe("methods", () => {
  it("answers a wrong method on a known path with 405 and Allow", async () => {
    const res = await api.app.inject({ method: "GET", url: "/api/v1/tasks/hello/trigger", headers: api.devAuth });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe("POST");
    expect(res.json().error).toBe("Method GET is not allowed on /api/v1/tasks/hello/trigger (allowed: POST)");
    const runs = await api.app.inject({ method: "DELETE", url: "/api/v3/runs/run_x" });
    expect(runs.statusCode).toBe(405);
    expect(runs.headers.allow).toBe("GET, HEAD");
    const unknown = await api.app.inject({ method: "GET", url: "/api/v1/nothing-here" });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatch(/No route for GET/);
  });

  it("answers 405 where a parametric route of another method would swallow a static path", async () => {
    const projectRef = api.project.projectRef;
    for (const method of ["GET", "PUT", "DELETE", "PATCH"] as const) {
      const url = `/api/v1/projects/${projectRef}/envvars/dev/import`;
      const res = await api.app.inject({ method, url, headers: { ...api.devAuth, "content-type": "application/json" }, payload: method === "GET" || method === "DELETE" ? undefined : '{"value":"x"}' });
      expect(res.statusCode, `${method} ${url}`).toBe(405);
      expect(res.headers.allow).toBe("POST");
      expect(res.json().error).toBe(`Method ${method} is not allowed on ${url} (allowed: POST)`);
    }
    for (const headers of [{}, api.devAuth]) {
      const upload = await api.app.inject({ method: "GET", url: "/api/v1/packets/upload/some-token", headers });
      expect(upload.statusCode).toBe(405);
      expect(upload.headers.allow).toBe("PUT");
      expect(upload.json().error).toBe("Method GET is not allowed on /api/v1/packets/upload/some-token (allowed: PUT)");
    }
    // The routes they shadowed still serve their own paths.
    expect((await api.app.inject({ method: "GET", url: `/api/v1/projects/${projectRef}/envvars/dev/NOT_SET`, headers: api.devAuth })).statusCode).toBe(404);
    expect((await api.app.inject({ method: "GET", url: "/api/v1/packets/run_x%2Fpayload.json", headers: api.devAuth })).statusCode).toBe(404);
  });

  it("answers an OPTIONS without Origin with the JSON error shape", async () => {
    const res = await api.app.inject({ method: "OPTIONS", url: "/api/v1/tasks/hello/trigger" });
    expect(res.statusCode).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.json().error).toMatch(/preflight/i);
    const preflight = await api.app.inject({ method: "OPTIONS", url: "/api/v1/tasks/hello/trigger", headers: { origin: "https://app.example", "access-control-request-method": "POST" } });
    expect(preflight.statusCode).toBe(204);
  });
});
