import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import type { RouteDefinition } from "../src/http/route.ts";
import { routesOf } from "../src/http/route.ts";
import { makeMatrixFixtures, registerScheduledTask } from "./auth-matrix-fixtures.ts";
import { MATRIX, type MatrixFixtures, type MatrixRequest } from "./auth-matrix-table.ts";
import { bearer, createUserWithPat } from "./credentials-fixtures.ts";
import { startAppWithDatabaseDown, startTestApi, type TestApi } from "./harness.ts";
import { injectUntilHeaders } from "./inject-stream.ts";
import { OpenApiChecker } from "./openapi-checker.ts";

/**
 * Drives every route with one good request and several bad ones and checks each real response
 * against the served OpenAPI document (status documented, headers, JSON Schema 2020-12 body).
 */
const TASK = "conformance-task";

let api: TestApi;
let fx: MatrixFixtures;
let pat: string;
let checker: OpenApiChecker;
/** The same routes with their pool pointing at a port nothing listens on: Postgres is down. */
let down: FastifyInstance;
let closeDown: () => Promise<void>;

type Method = "GET" | "POST" | "PUT" | "DELETE" | "PATCH";
interface Case {
  name: string;
  method: Method;
  url: string;
  headers?: Record<string, string>;
  payload?: string | object;
  /** An exact status, or "4xx" for any client error. */
  expect: number | "4xx";
}

const sk = () => bearer(api.project.environments.dev.secretKey);

/** Credentials for a matrix entry's good request: the owner's secret key, or a member's PAT where only a PAT is accepted. */
const ownerHeaders = (route: RouteDefinition<any, any, any>) => (route.auth?.allow.includes("secretKey") ? sk() : bearer(pat));

async function callbackUrl(): Promise<{ id: string; path: string }> {
  const res = await api.app.inject({ method: "POST", url: "/api/v1/waitpoints/tokens", headers: sk(), payload: { timeout: "1h" } });
  return { id: res.json().id, path: new URL(res.json().url).pathname };
}

async function uploadPath(): Promise<string> {
  const res = await api.app.inject({ method: "PUT", url: `/api/v2/packets/${encodeURIComponent(`conformance/${fx.unique("p")}/payload.json`)}`, headers: sk() });
  return new URL(res.json().presignedUrl).pathname;
}

async function downloadPath(): Promise<string> {
  const res = await api.app.inject({ method: "GET", url: `/api/v1/packets/${encodeURIComponent(await fx.packet())}`, headers: sk() });
  return new URL(res.json().presignedUrl).pathname;
}

/** Good requests of the routes the auth matrix does not build (the URL is the credential, or public data). */
const UNAUTHENTICATED: Record<string, () => Promise<Case[]>> = {
  "GET /api/v1/timezones": async () => [
    { name: "good", method: "GET", url: "/api/v1/timezones?excludeUtc=true", expect: 200 },
    { name: "bad query", method: "GET", url: "/api/v1/timezones?excludeUtc=maybe", expect: "4xx" },
  ],
  "GET /api/v1/packets/download/:token": async () => [
    { name: "good", method: "GET", url: await downloadPath(), expect: 200 },
    { name: "unknown token", method: "GET", url: "/api/v1/packets/download/nosuchtoken", expect: "4xx" },
    { name: "malformed token", method: "GET", url: "/api/v1/packets/download/%20not%20a%20token", expect: 400 },
  ],
  "PUT /api/v1/packets/upload/:token": async () => [
    { name: "good", method: "PUT", url: await uploadPath(), headers: { "content-type": "application/octet-stream" }, payload: "bytes", expect: 200 },
    { name: "unknown token", method: "PUT", url: "/api/v1/packets/upload/nosuchtoken", headers: { "content-type": "text/plain" }, payload: "x", expect: "4xx" },
  ],
  "POST /api/v1/waitpoints/tokens/:id/callback/:hash": async () => {
    const good = await callbackUrl();
    const other = await callbackUrl();
    return [
      { name: "good", method: "POST", url: good.path, payload: { done: true }, expect: 200 },
      { name: "wrong hash", method: "POST", url: `/api/v1/waitpoints/tokens/${other.id}/callback/${"0".repeat(40)}`, payload: {}, expect: 401 },
      { name: "unknown token", method: "POST", url: "/api/v1/waitpoints/tokens/waitpoint_nosuchtoken/callback/abc", payload: {}, expect: 404 },
      { name: "not JSON", method: "POST", url: other.path, headers: { "content-type": "text/plain" }, payload: "{not json", expect: 400 },
    ];
  },
};

/** One bad value per kind of path parameter: well-formed, but naming nothing. */
const MISSING: Record<string, string> = {
  runId: "run_doesnotexist000000",
  batchId: "batch_doesnotexist0000",
  id: "sched_doesnotexist",
  name: "NO_SUCH_VARIABLE",
  taskId: "no-such-task",
  session: "session_doesnotexist000000",
};

async function casesFor(route: RouteDefinition<any, any, any>): Promise<Case[]> {
  const key = `${route.method} ${route.url}`;
  const method = route.method as Method;
  const own = UNAUTHENTICATED[key];
  if (own) return own();
  const entry = MATRIX[key];
  if (!entry || entry.unauthenticated) throw new Error(`${key}: neither the auth matrix nor this test builds a request for it`);
  const request: MatrixRequest = await entry.build(fx);
  const withBody = (headers: Record<string, string>) => ({
    headers: { ...headers, ...(request.contentType ? { "content-type": request.contentType } : {}) },
    ...(request.payload !== undefined ? { payload: request.payload } : {}),
  });
  const cases: Case[] = [
    { name: "good", method, url: request.url, ...withBody(ownerHeaders(route)), expect: entry.success },
    { name: "no credential", method, url: request.url, ...withBody({}), expect: 401 },
    { name: "malformed credential", method, url: request.url, ...withBody({ authorization: "Bearer \u00ff\u00fe" }), expect: 401 },
  ];
  if (route.body) {
    cases.push(
      { name: "body of the wrong shape", method, url: request.url, headers: { ...ownerHeaders(route), "content-type": "application/json" }, payload: "[1, 2, 3]", expect: 400 },
      { name: "body not JSON", method, url: request.url, headers: { ...ownerHeaders(route), "content-type": "application/json" }, payload: "{", expect: 400 },
      { name: "body as text/plain", method, url: request.url, headers: { ...ownerHeaders(route), "content-type": "text/plain" }, payload: JSON.stringify(request.payload), expect: 415 },
    );
  }
  if (route.params) {
    // Replace the last path parameter by a well-formed id that names nothing.
    const last = [...route.url.matchAll(/:(\w+)/g)].at(-1)?.[1];
    // Setting a named concurrency limit (override, pause) creates it: no name is unknown to them.
    const creates = /\/concurrency-limits\/:name\/(override|pause)$/.test(route.url);
    if (last && MISSING[last] && !creates && !route.url.includes("/envvars/") && !route.url.includes("/tasks/:taskId")) {
      const segments = route.url.split("/");
      const index = segments.indexOf(`:${last}`);
      const url = request.url.split("?")[0]!.split("/");
      url[index] = route.url.includes("/waitpoints/") ? "waitpoint_doesnotexist0000" : MISSING[last]!;
      cases.push({ name: "unknown resource", method, url: url.join("/"), ...withBody(ownerHeaders(route)), expect: 404 });
    }
    if (route.url.includes("/envvars/")) {
      cases.push({ name: "unknown environment slug", method, url: request.url.replace("/envvars/dev", "/envvars/qa"), ...withBody(ownerHeaders(route)), expect: 400 });
    }
    // The packet path's own limit (1024) answers first for the wildcard.
    const tooLong = route.url.endsWith("*") ? "4xx" : 414;
    cases.push({ name: "path segment too long", method, url: route.url.replace(/:\w+|\*/g, "x".repeat(2100)), ...withBody(ownerHeaders(route)), expect: tooLong });
  }
  if (route.url === "/api/v1/runs") cases.push({ name: "bad filter", method, url: "/api/v1/runs?filter[createdAt][period]=forever", headers: sk(), expect: 400 });
  if (route.url === "/api/v1/schedules" && method === "POST") {
    cases.push({ name: "bad cron", method, url: request.url, headers: sk(), payload: { task: TASK, cron: "not a cron" }, expect: 422 });
  }
  if (route.url === "/api/v1/sessions" && method === "POST") {
    const { externalId } = await fx.session(true);
    const closed = await fx.session();
    await api.app.inject({ method: "POST", url: `/api/v1/sessions/${closed.id}/close`, headers: sk(), payload: {} });
    const body = (ext: string) => ({ type: "chat.agent", externalId: ext, taskIdentifier: TASK, triggerConfig: { basePayload: {} } });
    cases.push(
      { name: "open externalId again (cached)", method, url: request.url, headers: sk(), payload: body(externalId), expect: 200 },
      { name: "closed externalId", method, url: request.url, headers: sk(), payload: body(closed.externalId), expect: 409 },
    );
  }
  if (route.url === "/realtime/v1/sessions/:session/:io") {
    const { id } = await fx.session(true);
    cases.push(
      { name: "Timeout-Seconds out of range", method, url: request.url, headers: { ...sk(), "timeout-seconds": "0" }, expect: 400 },
      { name: "Last-Event-ID not a number", method, url: request.url, headers: { ...sk(), "last-event-id": "x" }, expect: 400 },
      { name: ".out, peeking", method, url: `/realtime/v1/sessions/${id}/out`, headers: { ...sk(), "x-peek-settled": "1", "timeout-seconds": "1" }, expect: 200 },
    );
  }
  if (route.url === "/realtime/v1/sessions/:session/:io/append") {
    const create = async () => (await api.app.inject({ method: "POST", url: "/api/v1/sessions", headers: sk(), payload: { type: "t", taskIdentifier: TASK, triggerConfig: { basePayload: {} } } })).json();
    const open = await create();
    const closed = await create();
    await api.app.inject({ method: "POST", url: `/api/v1/sessions/${closed.id}/close`, headers: sk(), payload: {} });
    const text = { "content-type": "text/plain" };
    cases.push(
      { name: ".out with a public token", method, url: `/realtime/v1/sessions/${open.id}/out/append`, headers: { ...bearer(open.publicAccessToken), ...text }, payload: "x", expect: 403 },
      { name: "closed session", method, url: `/realtime/v1/sessions/${closed.id}/in/append`, headers: { ...sk(), ...text }, payload: "x", expect: 400 },
    );
    cases.push({ name: "over 1 MiB", method, url: request.url, headers: { ...sk(), ...text }, payload: "x".repeat(1024 * 1024 + 1), expect: 413 });
  }
  return cases;
}

beforeAll(async () => {
  api = await startTestApi();
  await registerScheduledTask(api, [api.project], TASK);
  pat = (await createUserWithPat(api, "conformance@example.com", { memberOf: [api.project.projectRef] })).pat;
  fx = makeMatrixFixtures(api, api.project, { task: TASK, marker: "conformance-marker" });
  checker = new OpenApiChecker((await api.app.inject({ method: "GET", url: "/api/openapi.json" })).json());
  ({ app: down, close: closeDown } = await startAppWithDatabaseDown(api));
});
afterAll(async () => {
  await closeDown?.();
  await api?.close();
});

describe("every route's responses match the OpenAPI document", () => {
  it("covers every route the app registers", () => {
    const keys = routesOf(api.app).map((route) => `${route.method} ${route.url}`);
    expect(keys.length).toBeGreaterThan(30);
    expect(keys.filter((key) => !UNAUTHENTICATED[key] && (!MATRIX[key] || MATRIX[key]!.unauthenticated))).toEqual([]);
  });

  it("good and bad requests of each route", { timeout: 120_000 }, async () => {
    const problems: string[] = [];
    let checked = 0;
    for (const route of routesOf(api.app)) {
      for (const c of await casesFor(route)) {
        const res = await injectUntilHeaders(api.app, { method: c.method, url: c.url, headers: c.headers ?? {}, ...(c.payload !== undefined ? { payload: c.payload } : {}) });
        const label = `${route.method} ${route.url} (${c.name})`;
        if (c.expect === "4xx" ? res.statusCode < 400 || res.statusCode >= 500 : res.statusCode !== c.expect) {
          problems.push(`${label}: expected ${c.expect}, got ${res.statusCode} ${res.body.slice(0, 200)}`);
        }
        problems.push(...checker.check({ method: c.method, route: route.url, status: res.statusCode, headers: res.headers, body: res.body }).map((p) => `${label}: ${p}`));
        checked++;
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(120);
  });

  it("while the database is down, every route's answer (503 with Retry-After) is documented", { timeout: 120_000 }, async () => {
    const problems: string[] = [];
    const statuses = new Set<number>();
    for (const route of routesOf(api.app)) {
      const [good] = await casesFor(route);
      const res = await injectUntilHeaders(down, { method: good!.method, url: good!.url, headers: good!.headers ?? {}, ...(good!.payload !== undefined ? { payload: good!.payload } : {}) });
      statuses.add(res.statusCode);
      // Public reference data needs no database.
      if (res.statusCode !== 503 && route.url !== "/api/v1/timezones") problems.push(`${route.method} ${route.url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      problems.push(...checker.check({ method: good!.method, route: route.url, status: res.statusCode, headers: res.headers, body: res.body }));
    }
    expect(problems).toEqual([]);
    expect(statuses).toContain(503);
  });

  it("liveness, readiness (up and down), the document itself, and a wrong method on them, answer as documented", async () => {
    const problems: string[] = [];
    for (const [app, method, url, expected] of [
      [api.app, "GET", "/healthz", 200],
      [api.app, "GET", "/readyz", 200],
      [down, "GET", "/readyz", 503],
      [api.app, "GET", "/api/openapi.json", 200],
      [api.app, "POST", "/healthz", 405],
    ] as const) {
      const res = await app.inject({ method, url });
      if (res.statusCode !== expected) problems.push(`${method} ${url}: ${res.statusCode}, expected ${expected}`);
      problems.push(...checker.check({ method, route: url, status: res.statusCode, headers: res.headers, body: res.body }));
    }
    expect(problems).toEqual([]);
  });

  it("a method a path does not have answers 405 with Allow and the error body", async () => {
    const res = await api.app.inject({ method: "PATCH", url: "/api/v1/runs", headers: sk() });
    expect(res.statusCode).toBe(405);
    expect(checker.check({ method: "PATCH", route: "/api/v1/runs", status: res.statusCode, headers: res.headers, body: res.body })).toEqual([]);
    const json = { "content-type": "application/json" };
    expect(checker.check({ method: "PATCH", route: "/api/v1/runs", status: 200, headers: json, body: "{}" })[0]).toMatch(/no PATCH operation/);
    expect(checker.check({ method: "PATCH", route: "/api/v1/runs", status: 404, headers: json, body: JSON.stringify({ error: "x" }) })[0]).toMatch(/no PATCH operation/);
    expect(checker.check({ method: "PATCH", route: "/api/v1/runs", status: 405, headers: json, body: JSON.stringify({ error: "x" }) })[0]).toMatch(/Allow missing/);
  });

  it("the checker catches drift: an undocumented status, a wrong body, a missing header", () => {
    const json = { "content-type": "application/json; charset=utf-8" };
    expect(checker.check({ method: "GET", route: "/api/v1/runs", status: 418, headers: json, body: "{}" })[0]).toMatch(/status not documented/);
    expect(checker.check({ method: "GET", route: "/api/v1/runs", status: 200, headers: json, body: JSON.stringify({ data: "nope" }) })[0]).toMatch(/does not match/);
    expect(checker.check({ method: "GET", route: "/api/v1/runs", status: 401, headers: json, body: JSON.stringify({ message: "x" }) })[0]).toMatch(/does not match/);
    expect(checker.check({ method: "GET", route: "/api/v1/runs", status: 503, headers: json, body: JSON.stringify({ error: "x" }) })[0]).toMatch(/Retry-After missing/);
    expect(checker.check({ method: "GET", route: "/api/v1/schedules", status: 200, headers: json, body: JSON.stringify({ data: [], pagination: { currentPage: 1, totalPages: 0, count: 0 } }) })).toEqual([]);
  });
});
