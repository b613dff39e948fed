import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProjectCredentials } from "@svc/runtime/engine";
import type { CredentialKind } from "../src/auth/principal.ts";
import { routesOf } from "../src/http/route.ts";
import { MATRIX, type MatrixFixtures, type MatrixRequest } from "./auth-matrix-table.ts";
import { makeMatrixFixtures, registerScheduledTask } from "./auth-matrix-fixtures.ts";
import { bearer, createOtherProject, createUserWithPat, signJwt, tamperedJwt, unsignedJwt } from "./credentials-fixtures.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { injectUntilHeaders } from "./inject-stream.ts";

/** Appears only in project A/dev's data: any other caller seeing it is a cross-tenant leak. */
const MARKER = "tenant-a-marker-q7x2";
const TASK = "matrix-task";

let api: TestApi;
let a: ProjectCredentials;
let b: ProjectCredentials;
let memberPat: string;
let outsiderPat: string;
let fx: MatrixFixtures;

/** How the caller relates to the fixture (project A, env dev); decides the expected status. */
type Relation = "invalid" | "owner" | "otherEnv" | "member" | "nonMember" | "wrongScope";

interface Credential {
  name: string;
  kind: CredentialKind | "none";
  relation: Relation;
  headers(request: MatrixRequest): Promise<Record<string, string>>;
}

const now = () => Math.floor(Date.now() / 1000);
const jwtFor = (key: string, sub: string, scope: string | undefined) => signJwt(key, { sub, pub: true, scopes: scope ? [scope] : [] });

function credentials(): Credential[] {
  const sk = (name: string, key: string, relation: Relation): Credential => ({ name, kind: "secretKey", relation, headers: async () => bearer(key) });
  const jwt = (name: string, relation: Relation, make: (r: MatrixRequest) => Promise<string> | string): Credential => ({
    name,
    kind: "publicJwt",
    relation,
    headers: async (r) => bearer(await make(r)),
  });
  const A = a.environments;
  const B = b.environments;
  return [
    { name: "no credential", kind: "none", relation: "invalid", headers: async () => ({}) },
    sk("unknown secret key", "svc_dev_notarealkey000000000000", "invalid"),
    { name: "unknown PAT", kind: "personalAccessToken", relation: "invalid", headers: async () => bearer("svc_pat_notarealtoken000000000") },
    sk("A dev key", A.dev.secretKey, "owner"),
    sk("A prod key", A.prod.secretKey, "otherEnv"),
    sk("A preview key", A.preview.secretKey, "otherEnv"),
    sk("B dev key", B.dev.secretKey, "otherEnv"),
    sk("B prod key", B.prod.secretKey, "otherEnv"),
    sk("B preview key", B.preview.secretKey, "otherEnv"),
    { name: "PAT of an A member", kind: "personalAccessToken", relation: "member", headers: async () => bearer(memberPat) },
    { name: "PAT of a non-member", kind: "personalAccessToken", relation: "nonMember", headers: async () => bearer(outsiderPat) },
    jwt("A dev JWT, right scope", "owner", (r) => jwtFor(A.dev.secretKey, A.dev.id, r.scope)),
    jwt("A dev JWT, wrong scope", "wrongScope", (r) => jwtFor(A.dev.secretKey, A.dev.id, r.wrongScope)),
    jwt("B dev JWT naming A's resource", "otherEnv", (r) => jwtFor(B.dev.secretKey, B.dev.id, r.scope)),
    jwt("A dev JWT, expired", "invalid", (r) => signJwt(A.dev.secretKey, { sub: A.dev.id, pub: true, scopes: [r.scope] }, { now: now() - 7200, expiresAt: now() - 60 })),
    jwt("A dev JWT, tampered scopes", "invalid", async (r) => tamperedJwt(await jwtFor(A.dev.secretKey, A.dev.id, r.wrongScope), { scopes: [r.scope, "admin"] })),
    jwt("A dev JWT, alg none", "invalid", (r) => unsignedJwt({ sub: A.dev.id, pub: true, scopes: [r.scope, "admin"] })),
    jwt("A dev JWT signed with A prod's key", "invalid", (r) => jwtFor(A.prod.secretKey, A.dev.id, r.scope)),
    jwt("A dev JWT signed with B dev's key", "invalid", (r) => jwtFor(B.dev.secretKey, A.dev.id, r.scope)),
  ];
}

/**
 * The rule the README documents: a missing, unknown, expired or forged credential, or one of a
 * kind the route does not accept → 401; a valid one lacking scope or membership, or a secret key
 * naming another project or environment in the path → 403; a resource of another environment → 404.
 */
function expectedStatus(entry: { kinds: CredentialKind[]; target: string; success: number }, cred: Credential): number {
  if (cred.relation === "invalid" || cred.kind === "none" || !entry.kinds.includes(cred.kind)) return 401;
  switch (cred.relation) {
    case "owner":
    case "member":
      return entry.success;
    case "nonMember":
    case "wrongScope":
      return 403;
    case "otherEnv":
      return entry.target === "project" ? 403 : entry.target === "resource" ? 404 : entry.success;
  }
}

/** Callers who may see A/dev's data. */
const mayRead = (cred: Credential) => cred.relation === "owner" || cred.relation === "member";

beforeAll(async () => {
  api = await startTestApi();
  a = api.project;
  b = await createOtherProject(api, "tenant-b");
  memberPat = (await createUserWithPat(api, "a-member@example.com", { memberOf: [a.projectRef] })).pat;
  outsiderPat = (await createUserWithPat(api, "b-member@example.com", { memberOf: [b.projectRef] })).pat;
  await registerScheduledTask(api, [a, b], TASK);
  fx = makeMatrixFixtures(api, a, { task: TASK, marker: MARKER });
});
afterAll(async () => api?.close());

const routeKey = (route: { method: string; url: string }) => `${route.method} ${route.url}`;
const registered = () => new Map(routesOf(api.app).map((route) => [routeKey(route), route]));

describe("auth matrix", () => {
  it("has an entry for every route the app registers, with the credential kinds the route declares", () => {
    const missing: string[] = [];
    const mismatched: string[] = [];
    for (const [key, route] of registered()) {
      const entry = MATRIX[key];
      if (!entry) {
        missing.push(key);
        continue;
      }
      if (entry.unauthenticated) {
        if (route.auth) mismatched.push(`${key}: table says unauthenticated, route requires ${route.auth.allow.join("/")}`);
        continue;
      }
      const declared = [...(route.auth?.allow ?? [])].sort().join(",");
      if (declared !== [...entry.kinds].sort().join(",")) mismatched.push(`${key}: table ${entry.kinds.join("/")}, route ${declared || "no auth"}`);
    }
    expect(missing, "routes without an auth-matrix entry (add them to auth-matrix-table.ts)").toEqual([]);
    expect(mismatched).toEqual([]);
    expect(registered().size).toBeGreaterThan(20);
  });

  for (const [key, entry] of Object.entries(MATRIX)) {
    if (entry.unauthenticated) continue;
    it(`${key}: every credential gets exactly its status and never another tenant's data`, async (ctx) => {
      if (!registered().has(key)) ctx.skip();
      const [method] = key.split(" ") as ["GET" | "POST" | "PUT" | "PATCH" | "DELETE"];
      const failures: string[] = [];
      for (const cred of credentials()) {
        const request = await entry.build(fx);
        const headers = { ...(await cred.headers(request)), ...(request.contentType ? { "content-type": request.contentType } : {}) };
        const res = await injectUntilHeaders(api.app, {
          method,
          url: request.url,
          headers,
          ...(request.payload !== undefined ? { payload: request.payload } : {}),
        });
        const want = expectedStatus(entry, cred);
        if (res.statusCode !== want) failures.push(`${cred.name}: expected ${want}, got ${res.statusCode} ${res.body.slice(0, 200)}`);
        if (!mayRead(cred) && (res.body.includes(MARKER) || res.body.includes(a.environments.dev.id))) {
          failures.push(`${cred.name}: response leaks project A's data: ${res.body.slice(0, 200)}`);
        }
        if (entry.listShowsMarker && mayRead(cred) && res.statusCode === entry.success && !res.body.includes(MARKER)) {
          failures.push(`${cred.name}: the owner's list does not show the fixture (the leak check would prove nothing)`);
        }
        if (res.statusCode >= 400 && !/^\{"error":"/.test(res.body)) failures.push(`${cred.name}: error body without { error }: ${res.body}`);
      }
      expect(failures).toEqual([]);
    });
  }
});
