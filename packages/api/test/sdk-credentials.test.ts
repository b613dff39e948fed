import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, AuthenticationError, BadRequestError, configure, envvars, NotFoundError, PermissionDeniedError, runs, tasks } from "@trigger.dev/sdk";
import { ApiClient } from "@trigger.dev/core/v3";
import { decodeJwt } from "jose";
import { startTestApi, type TestApi } from "./harness.ts";
import { createPreviewBranch, createUserWithPat } from "./credentials-fixtures.ts";

// The published SDK, unchanged, against svc on a real port: env vars, PATs and self-signed tokens.
let api: TestApi;
let baseURL: string;
let pat: string;
let ref: string;
const retry = { retry: { maxAttempts: 1 } };

beforeAll(async () => {
  api = await startTestApi();
  baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  api.engine.apiUrl = baseURL;
  ref = api.project.projectRef;
  pat = (await createUserWithPat(api, "sdk@example.com", { memberOf: [ref] })).pat;
  await createPreviewBranch(api, ref, "feat-a");
  await createPreviewBranch(api, ref, "feat-b");
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: retry });
});
afterAll(async () => api?.close());

describe("@trigger.dev/sdk envvars against svc", () => {
  it("uploads, creates, lists, retrieves and deletes with the dev secret key", async () => {
    await envvars.upload(ref, "dev", { variables: { A: "1", B: "2" }, override: true });
    await envvars.create(ref, "dev", { name: "C", value: "3" });
    // The SDK forwards isSecret although its type does not declare it.
    const secret = { name: "S", value: "s3cret", isSecret: true };
    await envvars.create(ref, "dev", secret);
    expect(await envvars.list(ref, "dev")).toEqual([
      { name: "A", value: "1", isSecret: false },
      { name: "B", value: "2", isSecret: false },
      { name: "C", value: "3", isSecret: false },
      { name: "S", value: "<redacted>", isSecret: true },
    ]);
    expect(await envvars.retrieve(ref, "dev", "C")).toEqual({ name: "C", value: "3", isSecret: false });
    await envvars.del(ref, "dev", "C");
    await expect(envvars.retrieve(ref, "dev", "C")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("refuses the dev key on prod (403) and a reserved name (400)", async () => {
    await expect(envvars.list(ref, "prod")).rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(envvars.create(ref, "dev", { name: "SERVICE_SECRET_KEY", value: "x" })).rejects.toBeInstanceOf(BadRequestError);
  });

  it("targets preview branches with a PAT through previewBranch (x-trigger-branch)", async () => {
    const asBranch = (branch: string | undefined, fn: () => Promise<unknown>) => auth.withAuth({ accessToken: pat, previewBranch: branch }, fn);
    await asBranch("feat-a", () => envvars.create(ref, "preview", { name: "X", value: "a" }));
    await asBranch("feat-b", () => envvars.upload(ref, "preview", { variables: { X: "b" } }));
    expect(await asBranch("feat-a", () => envvars.retrieve(ref, "preview", "X"))).toMatchObject({ value: "a" });
    expect(await asBranch("feat-b", () => envvars.list(ref, "preview"))).toEqual([{ name: "X", value: "b", isSecret: false }]);
    await expect(asBranch("nope", () => envvars.list(ref, "preview"))).rejects.toBeInstanceOf(NotFoundError);
    expect(await asBranch(undefined, () => envvars.list(ref, "preview"))).toEqual([]);
  });
});

describe("@trigger.dev/sdk auth against svc", () => {
  it("self-signs a public token via /api/v1/auth/jwt/claims that svc accepts within its scopes", async () => {
    const handle = await tasks.trigger("hello-world", { n: 1 });
    const other = await tasks.trigger("hello-world", { n: 2 });
    const token = await auth.createPublicToken({ scopes: { read: { runs: [handle.id] } } });
    const run = await auth.withAuth({ accessToken: token }, () => runs.retrieve(handle.id));
    expect(run.id).toBe(handle.id);
    await expect(auth.withAuth({ accessToken: token }, () => runs.retrieve(other.id))).rejects.toBeInstanceOf(PermissionDeniedError);
  });

  it("lets a trigger token trigger only its task", async () => {
    const token = await auth.createTriggerPublicToken("hello-world", { multipleUse: true });
    const handle = await auth.withAuth({ accessToken: token }, () => tasks.trigger("hello-world", { n: 3 }));
    expect(handle.id).toMatch(/^run_/);
    await expect(auth.withAuth({ accessToken: token }, () => tasks.trigger("other-task", { n: 4 }))).rejects.toBeInstanceOf(PermissionDeniedError);
  });

  it("refuses the second use of the SDK's default (one-time) trigger token with a 422", async () => {
    const token = await auth.createTriggerPublicToken("hello-world");
    const handle = await auth.withAuth({ accessToken: token }, () => tasks.trigger("hello-world", { n: 5 }));
    expect(handle.id).toMatch(/^run_/);
    const again = auth.withAuth({ accessToken: token }, () => tasks.trigger("hello-world", { n: 6 }));
    await expect(again).rejects.toMatchObject({ status: 422 });
    await expect(again).rejects.toThrow(/one-time use token as it has already been used/);
  });

  it("lists a project's runs with a PAT and refuses a PAT on task.trigger (401)", async () => {
    const handle = await tasks.trigger("hello-world", { n: 5 });
    const page = await auth.withAuth({ accessToken: pat }, () => runs.list(ref, { env: ["dev"], limit: 100 }));
    expect(page.data.map((r) => r.id)).toContain(handle.id);
    await expect(auth.withAuth({ accessToken: pat }, () => tasks.trigger("hello-world", {}))).rejects.toBeInstanceOf(AuthenticationError);
  });
});

describe("POST /api/v1/auth/public-tokens (@trigger.dev/core's apiClient.createPublicToken)", () => {
  // The SDK's auth.createPublicToken calls it only with a run token or an additional API key
  // (neither of which svc issues); with a secret key it signs locally. Its API client is public.
  const client = () => new ApiClient(baseURL, api.project.environments.dev.secretKey);

  it("mints a token svc accepts within its scopes, expiring when asked", async () => {
    const handle = await tasks.trigger("hello-world", { n: 1 });
    const other = await tasks.trigger("hello-world", { n: 2 });
    const before = Math.floor(Date.now() / 1000);
    const { token } = await client().createPublicToken({ scopes: [`read:runs:${handle.id}`], expirationTime: "1h" });
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ pub: true, sub: api.project.environments.dev.id, scopes: [`read:runs:${handle.id}`] });
    expect(claims.exp! - claims.iat!).toBe(3600);
    expect(claims.iat!).toBeGreaterThanOrEqual(before);
    expect((await auth.withAuth({ accessToken: token }, () => runs.retrieve(handle.id))).id).toBe(handle.id);
    await expect(auth.withAuth({ accessToken: token }, () => runs.retrieve(other.id))).rejects.toBeInstanceOf(PermissionDeniedError);

    // Absent: 15 minutes (the SDK's local default); a Unix time in seconds: that time.
    const short = decodeJwt((await client().createPublicToken({ scopes: ["read:runs"] })).token);
    expect(short.exp! - short.iat!).toBe(900);
    const at = before + 7200;
    expect(decodeJwt((await client().createPublicToken({ scopes: ["read:runs"], expirationTime: at })).token).exp).toBe(at);
    // The realtime claim (skipColumns) is carried as the SDK signs it locally; serve-shape.ts reads it.
    const skipping = decodeJwt((await client().createPublicToken({ scopes: ["read:runs"], realtime: { skipColumns: ["payload"] } })).token);
    expect(skipping.realtime).toEqual({ skipColumns: ["payload"] });
    expect(short).not.toHaveProperty("realtime");
  });

  it("refuses bad requests with a 400, and any credential but a secret key (401)", async () => {
    const post = (payload: unknown, key = api.project.environments.dev.secretKey) =>
      api.app.inject({ method: "POST", url: "/api/v1/auth/public-tokens", headers: { authorization: `Bearer ${key}` }, payload: payload as object });
    for (const bad of [{}, { scopes: [] }, { scopes: ["fly:runs"] }, { scopes: ["read:planets"] }, { scopes: ["read:runs"], expirationTime: "soon" }, { scopes: ["read:runs"], expirationTime: 1000 }, { scopes: "read:runs" }]) {
      const res = await post(bad);
      expect(res.statusCode, `${JSON.stringify(bad)}: ${res.body}`).toBe(400);
      expect(res.json().error).toEqual(expect.any(String));
    }
    const { token } = await client().createPublicToken({ scopes: ["admin"] });
    // A public token (even an admin one) cannot mint tokens: as for /jwt/claims, a 401.
    expect((await post({ scopes: ["read:runs"] }, token)).statusCode).toBe(401);
    await expect(new ApiClient(baseURL, "svc_dev_nope").createPublicToken({ scopes: ["read:runs"] })).rejects.toBeInstanceOf(AuthenticationError);
  });
});
