import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ProjectCredentials } from "@svc/runtime/engine";
import { routesOf } from "../src/http/route.ts";
import { openApiPath } from "../src/openapi/document.ts";
import { makeMatrixFixtures, registerScheduledTask } from "./auth-matrix-fixtures.ts";
import { bearer, createOtherProject, createUserWithPat, signJwt } from "./credentials-fixtures.ts";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { operationsOf, positiveRequestFor, requestFor, type FuzzContext, type FuzzOperation, type FuzzRequest } from "./fuzz/requests.ts";
import { routeReached } from "./fuzz/route-match.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { injectUntilHeaders } from "./inject-stream.ts";
import { OpenApiChecker } from "./openapi-checker.ts";

/**
 * Property-based fuzzing of every operation of the served OpenAPI document: valid requests,
 * boundary values and mutations, with every kind of credential, in process (app.inject) against a
 * real Postgres. No answer may be a 5xx or differ from the document, and the app must stay healthy.
 * SVC_FUZZ_SEED replays a run (the seed is printed on failure); SVC_FUZZ_RUNS sets its size.
 */
const SEED = Number(process.env.SVC_FUZZ_SEED ?? 20_251_124);
const RUNS = Number(process.env.SVC_FUZZ_RUNS ?? 10_000);
const TASK = "fuzz-task";

let api: TestApi;
let other: ProjectCredentials;
let context: FuzzContext;
let checker: OpenApiChecker;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

async function post(url: string, payload: object) {
  const res = await api.app.inject({ method: "POST", url, headers: bearer(api.project.environments.dev.secretKey), payload });
  if (res.statusCode >= 300) throw new Error(`fixture ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
}

beforeAll(async () => {
  process.on("unhandledRejection", onUnhandled);
  // The public rate limit on: its 429s (with Retry-After) must be documented too. The clock stands
  // still, so the burst is spent after a fixed share of requests to the routes without credentials.
  api = await startTestApi({ clock: new FakeClock(), limits: { publicRateLimit: { perSecond: 1, burst: 400, maxAddresses: 100 } } });
  other = await createOtherProject(api, "fuzz-other");
  await registerScheduledTask(api, [api.project], TASK);
  const fx = makeMatrixFixtures(api, api.project, { task: TASK, marker: "fuzz" });
  const { pat } = await createUserWithPat(api, "fuzz@example.com", { memberOf: [api.project.projectRef] });
  const dev = api.project.environments.dev;

  const runs = [await fx.run(), await fx.run(), await fx.run()];
  const batches = [await fx.batch()];
  const tokens = [await post("/api/v1/waitpoints/tokens", { timeout: "1h" }), await post("/api/v1/waitpoints/tokens", { timeout: "1h" })];
  const schedules = [await fx.schedule(), await fx.schedule()];
  const variables = [await fx.variable(), await fx.variable()];
  const packets = [await fx.packet(), await fx.packet()];
  const packetUrl = async (path: string, method: "GET" | "PUT") =>
    new URL((await api.app.inject({ method, url: `/api/v${method === "GET" ? 1 : 2}/packets/${encodeURIComponent(path)}`, headers: bearer(dev.secretKey) })).json().presignedUrl).pathname.split("/").at(-1)!;
  const packetTokens = [await packetUrl(packets[0]!, "GET"), await packetUrl("fuzz/upload/payload.json", "PUT")];
  const callbacks = tokens.map((t) => new URL(t.url).pathname.split("/"));
  const sessions = [await fx.session(), await fx.session()];

  const now = Math.floor(Date.now() / 1000);
  const jwt = (scopes: string[], extra: Record<string, unknown> = {}) => signJwt(dev.secretKey, { sub: dev.id, pub: true, scopes, ...extra });
  context = {
    document: (await api.app.inject({ method: "GET", url: "/api/openapi.json" })).json(),
    known: {
      runId: runs,
      batchId: batches,
      id: [...tokens.map((t) => t.id), ...schedules],
      hash: callbacks.map((parts) => parts.at(-1)!),
      name: variables,
      projectRef: [api.project.projectRef, other.projectRef],
      env: ["dev", "prod", "staging", "stg", "preview"],
      taskId: [TASK],
      task: [TASK],
      taskIdentifiers: [TASK],
      token: packetTokens,
      file: [...packets, "fuzz/upload/payload.json"],
      cron: ["0 * * * *", "*/5 * * * *", "0 0 31 2 *"],
      timezone: ["UTC", "Europe/Paris"],
      timeout: ["1h", "10m", "1s"],
      "filter[status]": ["COMPLETED", "QUEUED,EXECUTING", "ACTIVE", "CLOSED"],
      session: [...sessions.flatMap((x) => [x.id, x.externalId]), "not-yet-created"],
      externalId: [sessions[0]!.externalId, "fuzz-chat"],
      io: ["in", "out"],
      callingRunId: [...sessions.map((x) => x.runId), ...runs],
      afterEventId: ["0", "1", "2"],
    },
    credentials: [
      { name: "none", header: undefined, weight: 1 },
      { name: "empty", header: "", weight: 1 },
      { name: "malformed", header: "Bearer", weight: 1 },
      { name: "basic", header: "Basic dXNlcjpwYXNz", weight: 1 },
      { name: "garbage", header: "Bearer a.b", weight: 1 },
      { name: "wrong prefix", header: `Bearer ${dev.secretKey.replace(/^svc_/, "tr_")}`, weight: 1 },
      { name: "unknown secret key", header: "Bearer svc_dev_00000000000000000000000000000000", weight: 1 },
      { name: "secret key", header: `Bearer ${dev.secretKey}`, weight: 14 },
      { name: "secret key (prod)", header: `Bearer ${api.project.environments.prod.secretKey}`, weight: 1 },
      { name: "other project's secret key", header: `Bearer ${other.environments.dev.secretKey}`, weight: 1 },
      { name: "personal access token", header: `Bearer ${pat}`, weight: 4 },
      { name: "unknown PAT", header: "Bearer svc_pat_00000000000000000000", weight: 1 },
      { name: "public JWT (broad scopes)", header: `Bearer ${await jwt(["read:runs", "write:runs", "write:waitpoints", "batchTrigger:tasks", `trigger:tasks:${TASK}`, "read:tasks"])}`, weight: 4 },
      { name: "public JWT (session scopes)", header: `Bearer ${await jwt([...sessions.flatMap((x) => [`read:sessions:${x.id}`, `write:sessions:${x.externalId}`]), "read:sessions", "write:sessions"])}`, weight: 3 },
      { name: "public JWT (no scopes)", header: `Bearer ${await jwt([])}`, weight: 1 },
      { name: "public JWT (one-time use)", header: `Bearer ${await jwt([`trigger:tasks:${TASK}`], { otu: true })}`, weight: 1 },
      { name: "public JWT (expired)", header: `Bearer ${await signJwt(dev.secretKey, { sub: dev.id, pub: true, scopes: ["read:runs"] }, { now: now - 7200, expiresAt: now - 60 })}`, weight: 1 },
    ],
  };
  checker = new OpenApiChecker(context.document);
}, 120_000);

afterAll(async () => {
  process.off("unhandledRejection", onUnhandled);
  await api?.close();
});

function describeRequest(request: FuzzRequest): string {
  const payload = request.payload === undefined ? "" : Buffer.isBuffer(request.payload) ? `<${request.payload.length} bytes>` : request.payload.slice(0, 300);
  return `${request.method} ${request.url.slice(0, 300)} [${request.mutation}] ${JSON.stringify(request.headers).slice(0, 200)} ${payload}`;
}

it(`${RUNS} generated requests over every operation: no 5xx, every answer as documented (seed ${SEED})`, { timeout: 600_000 }, async () => {
  const routes = routesOf(api.app);
  const routeOf = (method: string, path: string) => routes.find((r) => r.method === method && openApiPath(r.url) === path)?.url;
  const operations = operationsOf(context.document, routeOf);
  expect(operations.length).toBe(routes.length);
  const request = fc.oneof(...operations.map((operation) => requestFor(context, operation)));
  // The route the request reaches, else one serving its path under another method (405), else none:
  // dot segments may lead anywhere.
  const routeFor = (req: FuzzRequest) => routeReached(routes, req.method, req.url) ?? routes.map((r) => routeReached([r], r.method, req.url, Infinity)).find(Boolean);
  const statuses = new Map<number, number>();
  let sent = 0;
  try {
    await fc.assert(
      fc.asyncProperty(request, async (req) => {
        const res = await injectUntilHeaders(api.app, { method: req.method, url: req.url, headers: req.headers, ...(req.payload !== undefined ? { payload: req.payload } : {}) });
        sent++;
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        const problems = res.statusCode >= 500 ? [`${res.statusCode}: ${res.body.slice(0, 300)}`] : [];
        const route = routeFor(req);
        const response = { method: req.method, status: res.statusCode, headers: res.headers, body: res.body };
        problems.push(...(route ? checker.check({ ...response, route }) : checker.checkUnrouted(response)));
        if (problems.length) throw new Error(`${problems.join("\n")}\nrequest: ${describeRequest(req)}`);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  } catch (error) {
    console.error(`openapi fuzz failed with seed ${SEED} (replay: SVC_FUZZ_SEED=${SEED})`);
    throw error;
  }
  console.info(`openapi fuzz: ${sent} requests, seed ${SEED}, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`);
  expect(sent).toBeGreaterThanOrEqual(RUNS);
  // Still healthy: the health check and a plain authenticated read answer, and nothing was left unhandled.
  expect((await api.app.inject({ method: "GET", url: "/readyz" })).statusCode).toBe(200);
  expect((await api.app.inject({ method: "GET", url: "/api/v1/runs", headers: bearer(api.project.environments.dev.secretKey) })).statusCode).toBe(200);
  expect(unhandled).toEqual([]);
});

/** The operations of the document with the route each was built from. */
function documentOperations(): FuzzOperation[] {
  const routes = routesOf(api.app);
  return operationsOf(context.document, (method, path) => routes.find((r) => r.method === method && openApiPath(r.url) === path)?.url);
}

/**
 * Refusals (400) that hang on a resource's state or on the clock, which no schema can say: a
 * closed or expired session (Trigger.dev answers 400 there too), an index past this batch's
 * runCount (the document bounds it by the largest batch), an expiresAt already past, an
 * application/store payload naming a packet never uploaded, a reschedule of a run that is not
 * DELAYED or to a time already past (Trigger.dev answers 400 to both), a trace page cursor of
 * another run's trace; and two rules the document states in words (below). Every other 400 to a request the document admits is the document and the
 * server disagreeing.
 */
const STATE_REFUSALS = [
  /^Cannot (continue|append to) an? (closed|expired) session$/,
  /^index [0-9]+ is out of range: batch \S+ has runCount/,
  /^expiresAt: \S+ has passed/,
  /^expirationTime: (must be in the future|at most [0-9]+d from now)$/,
  /payload: packet ".*" not found; get an upload URL/,
  /^Cannot reschedule a run that is not delayed: /,
  /^Invalid delay: .* is not in the future$/,
  /^page\[after\]: .* is not a span of this run's trace$/,
  // Rules across fields or inside a duration's grammar that the document states in words only: a
  // replay from the failure keeps the failed run's payload (its recorded steps were computed from
  // it); a debounce delay is at least one second (Trigger.dev's minimum).
  /^payload cannot be changed when replaying from the failure: /,
  /^debounce\.delay: .* is shorter than the minimum of 1s$/,
  // A concurrency limit's override: its bounds or one key's (the body's description), and a ttl's duration grammar.
  /^Invalid request body: (perKey: a per-key override needs `perKey`|total: `total` is not per key|ttl: `ttl` only applies to a per-key override|provide at least one of `perKey` or `total`)/,
  /^ttl: (".*" is not a duration|must be more than 0 and at most 30 days)/,
];

it("keeps to the document's patterns: no \\d, \\w or \\s, which tools read as Unicode classes", () => {
  const patterns: string[] = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === "object") for (const [key, value] of Object.entries(node)) key === "pattern" && typeof value === "string" ? patterns.push(value) : walk(value);
  };
  walk(context.document);
  expect(patterns.length).toBeGreaterThan(5);
  expect(patterns.filter((pattern) => /\\[dDwWsS]/.test(pattern))).toEqual([]);
});

it(`positive data: requests the document admits are never refused for what they hold (seed ${SEED})`, { timeout: 600_000 }, async () => {
  const dev = api.project.environments.dev;
  const cursors = await (async () => {
    const page = (await api.app.inject({ method: "GET", url: "/api/v1/runs?page[size]=1", headers: bearer(dev.secretKey) })).json();
    return [page.pagination.next].filter(Boolean);
  })();
  const positiveContext = { ...context, known: { ...context.known, "page[after]": cursors, "page[before]": cursors } };
  const operations = documentOperations();
  const cursorParams = ["page[after]", "page[before]"];
  const request = fc.oneof(...operations.map((operation) => positiveRequestFor(positiveContext, operation, `Bearer ${dev.secretKey}`, cursorParams, [cursorParams])));
  const refused = new Map<string, string>();
  let sent = 0;
  await fc.assert(
    fc.asyncProperty(request, async (req) => {
      const res = await injectUntilHeaders(api.app, { method: req.method, url: req.url, headers: req.headers, ...(req.payload !== undefined ? { payload: req.payload } : {}) });
      sent++;
      const error = res.statusCode >= 400 && res.body ? (JSON.parse(res.body) as { error?: string }).error ?? "" : "";
      const schemaRefusal = (res.statusCode === 400 && !STATE_REFUSALS.some((pattern) => pattern.test(error))) || res.statusCode === 415 || res.statusCode >= 500;
      if (schemaRefusal && !refused.has(`${req.method} ${req.operation.path}`)) refused.set(`${req.method} ${req.operation.path}`, `${res.statusCode} ${error.slice(0, 200)} ← ${describeRequest(req)}`);
    }),
    { seed: SEED, numRuns: Math.min(RUNS, 3000) },
  );
  expect(sent).toBeGreaterThan(0);
  expect(Object.fromEntries(refused)).toEqual({});
});

it("negative data: a value the document refuses, in a parameter or a body field, gets a 4xx with { error }", async () => {
  const ajv = new Ajv2020({ strict: false, validateSchema: false });
  addFormats.default(ajv);
  ajv.addSchema(context.document, "doc");
  const resolve = (schema: any): any => (schema?.$ref ? schema.$ref.slice(2).split("/").reduce((n: any, k: string) => n[k], context.document) : schema);
  const validate = (schema: unknown, value: unknown) => {
    const node = JSON.parse(JSON.stringify(schema).replace(/"#\/components/g, '"doc#/components'));
    return ajv.validate(node, value);
  };
  const CANDIDATES: unknown[] = ["zz-not-allowed", "", "a\u0000b", "-1", "1.5", "abc", 0, -1, 1.5, null, true, [], {}, "9".repeat(40)];
  const dev = bearer(api.project.environments.dev.secretKey);
  const known = (name: string) => context.known[name]?.[0] ?? "x";
  const problems: string[] = [];
  let checked = 0;
  for (const operation of documentOperations()) {
    const pathOf = (override?: [string, string]) =>
      operation.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(override && override[0] === name ? override[1] : known(name)));
    const send = async (what: string, url: string, payload?: unknown, headers: Record<string, string> = {}) => {
      const res = await injectUntilHeaders(api.app, {
        method: operation.method,
        url,
        headers: { ...dev, ...headers, ...(payload !== undefined ? { "content-type": "application/json" } : {}) },
        ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
      });
      checked++;
      let body: { error?: unknown } | undefined;
      try {
        body = JSON.parse(res.body);
      } catch {
        body = undefined;
      }
      if (res.statusCode < 400 || res.statusCode >= 500 || typeof body?.error !== "string") problems.push(`${operation.method} ${operation.path} ${what}: ${res.statusCode} ${res.body.slice(0, 150)}`);
    };
    for (const param of operation.parameters) {
      const schema = resolve(param.schema);
      const bad = CANDIDATES.filter((c) => typeof c === "string" && (param.in !== "header" || c !== "")).map(String).find((c) => !validate(schema, schema.type === "integer" || schema.type === "number" ? Number(c) : c) && !(schema.type === "integer" && c === ""));
      if (bad === undefined || (param.in === "path" && bad === "")) continue;
      const body = operation.body?.mediaType === "application/json" ? {} : undefined;
      if (param.in === "path") await send(`path ${param.name}=${JSON.stringify(bad)}`, pathOf([param.name, bad]), body);
      else if (param.in === "header") await send(`header ${param.name}=${JSON.stringify(bad)}`, pathOf(), body, { [param.name]: bad });
      else await send(`query ${param.name}=${JSON.stringify(bad)}`, `${pathOf()}?${encodeURIComponent(param.name)}=${encodeURIComponent(bad)}`, body);
    }
    const schema = resolve(operation.body?.schema);
    if (operation.body?.mediaType !== "application/json" || !schema?.properties) continue;
    for (const [name, property] of Object.entries(schema.properties as Record<string, unknown>)) {
      const bad = CANDIDATES.find((c) => !validate(property, c));
      if (bad === undefined) continue;
      const required = Object.fromEntries(((schema.required ?? []) as string[]).map((key) => [key, known(key)]));
      await send(`body ${name}=${JSON.stringify(bad)}`, pathOf(), { ...required, [name]: bad });
    }
  }
  expect(checked).toBeGreaterThan(50);
  expect(problems).toEqual([]);
});
