import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getEnvironment, type Environment } from "@svc/runtime/engine";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { bearer, createUserWithPat } from "./credentials-fixtures.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { injectUntilHeaders } from "./inject-stream.ts";
import { createSessionOk } from "./sessions-helpers.ts";

/**
 * Every session operation × every kind of credential × both names of the session: in the path
 * (its `session_…` id or its externalId) and in the token's scopes. A token scoped to either name
 * opens the session under both; `.out` appends and PATCH/close need a secret key; PATs are not
 * accepted on session routes (401), like task triggers.
 */

const CREDENTIALS = ["secret key", "PAT", "read token", "write token", "read+write token", "another session's token", "expired token"] as const;
type Credential = (typeof CREDENTIALS)[number];
/** Expected statuses, in the order of CREDENTIALS. */
type Statuses = [number, number, number, number, number, number, number];
type Form = "id" | "externalId";
const FORMS: Form[] = ["id", "externalId"];

interface Session {
  id: string;
  externalId: string;
  runId: string;
}

interface Request {
  method: "GET" | "POST" | "PATCH";
  url: string;
  payload?: string | object;
  headers?: Record<string, string>;
}

interface Operation {
  name: string;
  /** The path names the session (tried under both of its names). */
  path: boolean;
  request(session: Session, ref: string): Request;
  /** Done to the fresh session before the request (with the secret key). */
  prepare?(session: Session): Promise<void>;
  /** The name the tokens' scopes give, when not the session's own (a create names its new externalId). */
  scopeTarget?(session: Session): string;
  expect: Statuses;
}

const TASK = "chat-agent";
const createBody = (externalId: string) => ({ type: "chat.agent", externalId, taskIdentifier: TASK, triggerConfig: { basePayload: { chatId: externalId } } });
const channel = (ref: string, io: "in" | "out", rest = "") => `/realtime/v1/sessions/${encodeURIComponent(ref)}/${io}${rest}`;
const text = { "content-type": "text/plain" };

//                                                  secret PAT  read write r+w  other expired
const OPERATIONS: Operation[] = [
  { name: "create (a new externalId)", path: false, request: (s) => ({ method: "POST", url: "/api/v1/sessions", payload: createBody(`${s.externalId}-new`) }), scopeTarget: (s) => `${s.externalId}-new`, expect: [201, 401, 403, 201, 201, 403, 401] },
  { name: "create (an open externalId: cached)", path: false, request: (s) => ({ method: "POST", url: "/api/v1/sessions", payload: createBody(s.externalId) }), expect: [200, 401, 403, 200, 200, 403, 401] },
  { name: "retrieve", path: true, request: (_, ref) => ({ method: "GET", url: `/api/v1/sessions/${ref}` }), expect: [200, 401, 200, 403, 200, 403, 401] },
  { name: "list", path: false, request: () => ({ method: "GET", url: "/api/v1/sessions" }), expect: [200, 401, 403, 403, 403, 403, 401] },
  { name: "update (PATCH)", path: true, request: (_, ref) => ({ method: "PATCH", url: `/api/v1/sessions/${ref}`, payload: { tags: ["patched"] } }), expect: [200, 401, 403, 403, 403, 403, 401] },
  { name: "close", path: true, request: (_, ref) => ({ method: "POST", url: `/api/v1/sessions/${ref}/close`, payload: {} }), expect: [200, 401, 403, 403, 403, 403, 401] },
  // A public token never hands over from a live run (it would keep running beside its successor)…
  { name: "end-and-continue (its run live)", path: true, request: (s, ref) => ({ method: "POST", url: `/api/v1/sessions/${ref}/end-and-continue`, payload: { callingRunId: s.runId, reason: "upgrade" } }), expect: [200, 401, 403, 403, 403, 403, 401] },
  // …but restarts a session whose run has ended.
  { name: "end-and-continue (its run ended)", path: true, prepare: (s) => cancel(s.runId), request: (s, ref) => ({ method: "POST", url: `/api/v1/sessions/${ref}/end-and-continue`, payload: { callingRunId: s.runId, reason: "upgrade" } }), expect: [200, 401, 403, 200, 200, 403, 401] },
  { name: "list its runs", path: true, request: (_, ref) => ({ method: "GET", url: `/api/v1/sessions/${ref}/runs` }), expect: [200, 401, 200, 403, 200, 403, 401] },
  { name: ".in append", path: true, request: (_, ref) => ({ method: "POST", url: channel(ref, "in", "/append"), headers: text, payload: `{"text":"hi"}` }), expect: [200, 401, 403, 200, 200, 403, 401] },
  { name: ".out append", path: true, request: (_, ref) => ({ method: "POST", url: channel(ref, "out", "/append"), headers: text, payload: `{"text":"hi"}` }), expect: [200, 401, 403, 403, 403, 403, 401] },
  { name: "subscribe .in", path: true, request: (_, ref) => ({ method: "GET", url: channel(ref, "in"), headers: { "timeout-seconds": "1" } }), expect: [200, 401, 200, 403, 200, 403, 401] },
  { name: "subscribe .out", path: true, request: (_, ref) => ({ method: "GET", url: channel(ref, "out"), headers: { "timeout-seconds": "1" } }), expect: [200, 401, 200, 403, 200, 403, 401] },
  { name: "drain .in", path: true, request: (_, ref) => ({ method: "GET", url: channel(ref, "in", "/records") }), expect: [200, 401, 200, 403, 200, 403, 401] },
  { name: "drain .out", path: true, request: (_, ref) => ({ method: "GET", url: channel(ref, "out", "/records") }), expect: [200, 401, 200, 403, 200, 403, 401] },
];

let api: TestApi;
let clock: FakeClock;
let env: Environment;
let pat: string;
let other: Session;
let counter = 0;

beforeAll(async () => {
  clock = new FakeClock(new Date("2026-05-01T12:00:00.000Z"));
  api = await startTestApi({ clock });
  env = (await getEnvironment(api.db.pool, api.project.environments.dev.id))!;
  pat = (await createUserWithPat(api, "session-scopes@example.com", { memberOf: [api.project.projectRef] })).pat;
  other = await newSession();
});
afterAll(async () => api?.close());

async function newSession(): Promise<Session> {
  const created = await createSessionOk(api, { externalId: `chat-${++counter}` });
  return { id: created.id, externalId: created.externalId!, runId: created.runId };
}

async function cancel(runId: string): Promise<void> {
  const res = await api.app.inject({ method: "POST", url: `/api/v2/runs/${runId}/cancel`, headers: api.devAuth });
  expect(res.statusCode).toBe(200);
}

const names = (s: Session) => [s.id, s.externalId];

/** The Authorization header of one credential, its session scopes naming `target`. */
async function authorization(credential: Credential, target: string): Promise<Record<string, string>> {
  const token = (scopes: string[]) => mintPublicToken(api.deps, env, scopes);
  switch (credential) {
    case "secret key":
      return api.devAuth;
    case "PAT":
      return bearer(pat);
    case "read token":
      return bearer(await token([`read:sessions:${target}`]));
    case "write token":
      return bearer(await token([`write:sessions:${target}`]));
    case "read+write token":
      return bearer(await token([`read:sessions:${target}`, `write:sessions:${target}`]));
    case "another session's token":
      return bearer(await token(names(other).flatMap((name) => [`read:sessions:${name}`, `write:sessions:${name}`])));
    case "expired token": {
      const expiring = await mintPublicToken(api.deps, env, [`read:sessions:${target}`, `write:sessions:${target}`], 1);
      clock.advance(2000);
      return bearer(expiring);
    }
  }
}

describe("session scopes", () => {
  for (const operation of OPERATIONS) {
    it(`${operation.name}: ${CREDENTIALS.map((c, i) => `${c} ${operation.expect[i]}`).join(", ")}`, async () => {
      const failures: string[] = [];
      let cells = 0;
      for (const [index, credential] of CREDENTIALS.entries()) {
        for (const pathForm of operation.path ? FORMS : (["id"] as Form[])) {
          for (const scopeForm of FORMS) {
            // A fresh session for every cell: a close or an end-and-continue leaves no trace on the next.
            const session = await newSession();
            await operation.prepare?.(session);
            const ref = pathForm === "id" ? session.id : session.externalId;
            const target = operation.scopeTarget?.(session) ?? (scopeForm === "id" ? session.id : session.externalId);
            const request = operation.request(session, ref);
            const res = await injectUntilHeaders(api.app, {
              method: request.method,
              url: request.url,
              headers: { ...(await authorization(credential, target)), ...request.headers },
              ...(request.payload !== undefined ? { payload: request.payload } : {}),
            });
            cells++;
            const want = operation.expect[index];
            const cell = `${credential}, path by ${operation.path ? pathForm : "-"}, scoped by ${operation.scopeTarget ? "its externalId" : scopeForm}`;
            if (res.statusCode !== want) failures.push(`${cell}: expected ${want}, got ${res.statusCode} ${res.body.slice(0, 200)}`);
            if (res.statusCode >= 400 && typeof res.json().error !== "string") failures.push(`${cell}: error without { error }: ${res.body}`);
          }
        }
      }
      expect(failures).toEqual([]);
      expect(cells).toBe(CREDENTIALS.length * (operation.path ? 4 : 2));
    });
  }

  it("a create is also allowed by type-level write:sessions or write:tasks:<task>; not by another task's or by read:sessions", async () => {
    const create = async (scopes: string[]) => {
      const res = await api.app.inject({ method: "POST", url: "/api/v1/sessions", headers: bearer(await mintPublicToken(api.deps, env, scopes)), payload: createBody(`by-scope-${++counter}`) });
      return res.statusCode;
    };
    expect(await create(["write:sessions"])).toBe(201);
    expect(await create([`write:tasks:${TASK}`])).toBe(201);
    expect(await create(["write:tasks:another-task"])).toBe(403);
    expect(await create(["read:sessions"])).toBe(403);
    const noExternalId = await api.app.inject({
      method: "POST",
      url: "/api/v1/sessions",
      headers: bearer(await mintPublicToken(api.deps, env, ["write:sessions"])),
      payload: { type: "chat.agent", taskIdentifier: TASK, triggerConfig: { basePayload: {} } },
    });
    expect(noExternalId.statusCode).toBe(201);
  });

  it("type-level read:sessions lists and reads every session; write:sessions writes to every .in, never to .out", async () => {
    const s = await newSession();
    const read = bearer(await mintPublicToken(api.deps, env, ["read:sessions"]));
    const write = bearer(await mintPublicToken(api.deps, env, ["write:sessions"]));
    const list = await api.app.inject({ method: "GET", url: `/api/v1/sessions?filter[externalId]=${s.externalId}`, headers: read });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((item: { id: string }) => item.id)).toEqual([s.id]);
    expect((await api.app.inject({ method: "GET", url: `/api/v1/sessions/${s.externalId}`, headers: read })).json().id).toBe(s.id);
    expect((await api.app.inject({ method: "POST", url: channel(s.id, "in", "/append"), headers: { ...write, ...text }, payload: "x" })).statusCode).toBe(200);
    expect((await api.app.inject({ method: "POST", url: channel(s.id, "out", "/append"), headers: { ...write, ...text }, payload: "x" })).statusCode).toBe(403);
    expect((await api.app.inject({ method: "POST", url: channel(s.id, "out", "/append"), headers: { ...bearer(await mintPublicToken(api.deps, env, ["admin"])), ...text }, payload: "x" })).statusCode).toBe(403);
  });

  it("appends by id under a token scoped to the externalId with one lookup of the session, and still refuses every other token", async () => {
    const s = await newSession();
    const lookups: string[] = [];
    const pool = api.deps.engine.db;
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
    (pool as { query: unknown }).query = (...args: unknown[]) => {
      if (typeof args[0] === "string" && args[0].startsWith("SELECT * FROM sessions WHERE id = $1")) lookups.push(args[0]);
      return query(...args);
    };
    try {
      const append = async (scopes: string[]) =>
        (await api.app.inject({ method: "POST", url: channel(s.id, "in", "/append"), headers: { ...bearer(await mintPublicToken(api.deps, env, scopes)), ...text }, payload: "x" })).statusCode;
      const write = [`write:sessions:${s.externalId}`];
      expect(await append(write)).toBe(200);
      expect(await append(write)).toBe(200);
      expect(await append(write)).toBe(200);
      // Its id and externalId were looked up once, and are remembered: they never change.
      expect(lookups).toHaveLength(1);
      expect(await append([`read:sessions:${s.externalId}`])).toBe(403);
      expect(await append(names(other).map((name) => `write:sessions:${name}`))).toBe(403);
      expect(await append([`write:sessions:${s.externalId}-other`])).toBe(403);
    } finally {
      (pool as { query: unknown }).query = query;
    }
  });

  it("lists with read:tasks, or read:tasks:<task> for every task filtered on", async () => {
    const s = await newSession();
    const list = async (query: string, scopes: string[]) =>
      (await api.app.inject({ method: "GET", url: `/api/v1/sessions?${query}`, headers: bearer(await mintPublicToken(api.deps, env, scopes)) })).statusCode;
    expect(await list(`filter[externalId]=${s.externalId}`, ["read:tasks"])).toBe(200);
    expect(await list(`filter[taskIdentifier]=${TASK}`, [`read:tasks:${TASK}`])).toBe(200);
    expect(await list(`filter[taskIdentifier]=${TASK},other-task`, [`read:tasks:${TASK}`])).toBe(403);
    expect(await list("", [`read:tasks:${TASK}`])).toBe(403);
    expect(await list("", [`read:sessions:${s.id}`])).toBe(403);
  });
});
