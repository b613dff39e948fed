import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "@svc/runtime/db";
import { archiveBranch, FakeClock, getEnvironment, rotateSecretKey, type ProjectCredentials } from "@svc/runtime/engine";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { bearer, createOtherProject, createPreviewBranch, signJwt, tamperedJwt, unsignedJwt } from "./credentials-fixtures.ts";

const START = new Date("2030-01-01T00:00:00Z");
const clock = new FakeClock(START);
let api: TestApi;
let other: ProjectCredentials;
let branchId: string;
const nowSeconds = () => Math.floor(clock.now().getTime() / 1000);

beforeAll(async () => {
  api = await startTestApi({ clock });
  other = await createOtherProject(api);
  branchId = await createPreviewBranch(api, api.project.projectRef, "feat-jwt");
});
afterAll(async () => api?.close());

const env = () => api.project.environments;
const verify = (token: string) => api.deps.verifyPublicJwt!(token);
const claims = (key: string, headers: Record<string, string> = {}) =>
  api.app.inject({ method: "POST", url: "/api/v1/auth/jwt/claims", headers: { ...bearer(key), ...headers } });

describe("POST /api/v1/auth/jwt/claims", () => {
  it("answers the environment id as sub with pub: true", async () => {
    const res = await claims(env().dev.secretKey);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ sub: env().dev.id, pub: true });
  });

  it("answers the branch environment for a preview key with a branch header", async () => {
    expect((await claims(env().preview.secretKey, { "x-trigger-branch": "feat-jwt" })).json()).toEqual({ sub: branchId, pub: true });
    expect((await claims(env().preview.secretKey)).json()).toEqual({ sub: env().preview.id, pub: true });
    expect((await claims(env().preview.secretKey, { "x-service-branch": "no-such-branch" })).statusCode).toBe(401);
  });

  it("ignores the branch header for dev, staging and prod keys", async () => {
    for (const slug of ["dev", "staging", "prod"] as const) {
      const res = await claims(env()[slug].secretKey, { "x-service-branch": "feat-jwt" });
      expect(res.json()).toEqual({ sub: env()[slug].id, pub: true });
    }
  });

  it("refuses PATs, JWTs and missing credentials with 401", async () => {
    expect((await claims("svc_pat_whatever")).statusCode).toBe(401);
    const jwt = await signJwt(env().dev.secretKey, { sub: env().dev.id, pub: true, scopes: ["admin"] }, { now: nowSeconds() });
    expect((await claims(jwt)).statusCode).toBe(401);
    expect((await api.app.inject({ method: "POST", url: "/api/v1/auth/jwt/claims" })).statusCode).toBe(401);
  });
});

describe("verifyPublicJwt", () => {
  it("accepts a token self-signed the SDK's way and returns its environment and scopes", async () => {
    const token = await signJwt(env().dev.secretKey, { sub: env().dev.id, pub: true, scopes: ["read:runs:run_1"] }, { now: nowSeconds() });
    const principal = await verify(token);
    expect(principal.environment.id).toBe(env().dev.id);
    expect(principal.scopes).toEqual(["read:runs:run_1"]);
  });

  it("accepts tokens minted by svc itself, and tokens without iss/aud", async () => {
    const prod = (await getEnvironment(api.db.pool, env().prod.id))!;
    const minted = await mintPublicToken(api.deps, prod, ["write:waitpoints"]);
    expect((await verify(minted)).scopes).toEqual(["write:waitpoints"]);
    const bare = await signJwt(env().dev.secretKey, { sub: env().dev.id, pub: true }, { now: nowSeconds(), issuer: null, audience: null });
    expect((await verify(bare)).scopes).toEqual([]);
  });

  it("verifies a branch token with the parent preview key", async () => {
    const token = await signJwt(env().preview.secretKey, { sub: branchId, pub: true, scopes: [] }, { now: nowSeconds() });
    expect((await verify(token)).environment).toMatchObject({ id: branchId, branchName: "feat-jwt" });
  });

  it("refuses expired, unsigned, tampered and foreign-signed tokens", async () => {
    const good = { sub: env().dev.id, pub: true, scopes: ["read:runs"] };
    const expired = await signJwt(env().dev.secretKey, good, { now: nowSeconds() - 7200, expiresAt: nowSeconds() - 1 });
    await expect(verify(expired)).rejects.toThrow(/expired/);
    await expect(verify(unsignedJwt(good))).rejects.toThrow(/only HS256/);
    const signed = await signJwt(env().dev.secretKey, good, { now: nowSeconds() });
    await expect(verify(tamperedJwt(signed, { scopes: ["admin"] }))).rejects.toThrow(/invalid/);
    await expect(verify(await signJwt(env().prod.secretKey, good, { now: nowSeconds() }))).rejects.toThrow(/invalid/);
    await expect(verify(await signJwt(other.environments.dev.secretKey, good, { now: nowSeconds() }))).rejects.toThrow(/invalid/);
  });

  it("refuses tokens without exp or pub, with a wrong issuer or audience, or an unknown sub", async () => {
    const key = env().dev.secretKey;
    const sub = env().dev.id;
    await expect(verify(await signJwt(key, { sub, pub: true }, { now: nowSeconds(), expiresAt: -1 }))).rejects.toThrow(/invalid/);
    await expect(verify(await signJwt(key, { sub, scopes: [] }, { now: nowSeconds() }))).rejects.toThrow(/not a public access token/);
    await expect(verify(await signJwt(key, { sub, pub: true }, { now: nowSeconds(), issuer: "https://evil" }))).rejects.toThrow(/issuer/);
    await expect(verify(await signJwt(key, { sub, pub: true }, { now: nowSeconds(), audience: "https://evil" }))).rejects.toThrow(/audience/);
    await expect(verify(await signJwt(key, { sub: "env_nope", pub: true }, { now: nowSeconds() }))).rejects.toThrow(/invalid/);
    await expect(verify(await signJwt(key, { pub: true }, { now: nowSeconds() }))).rejects.toThrow(/subject/);
    await expect(verify(await signJwt(key, { sub, pub: true, scopes: "admin" }, { now: nowSeconds() }))).rejects.toThrow(/scopes/);
    await expect(verify("not.a.jwt")).rejects.toThrow(/invalid/);
    await expect(verify(await signJwt(key, { sub: "env_\u0000", pub: true }, { now: nowSeconds() }))).rejects.toThrow(/invalid/);
  });

  it("stops accepting tokens of an archived branch", async () => {
    const id = await createPreviewBranch(api, api.project.projectRef, "short-lived");
    const token = await signJwt(env().preview.secretKey, { sub: id, pub: true }, { now: nowSeconds() });
    await expect(verify(token)).resolves.toMatchObject({ kind: "publicJwt" });
    // Verification keys are cached like secret keys: dropped by the change notice the archive sends.
    const noticed = api.deps.secretKeys!.nextClear();
    await archiveBranch(api.db.pool, api.project.projectRef, "short-lived", clock.now());
    await noticed;
    await expect(verify(token)).rejects.toThrow(/invalid/);
  });

  it("uses the engine clock for expiry", async () => {
    const token = await signJwt(env().dev.secretKey, { sub: env().dev.id, pub: true }, { now: nowSeconds(), expiresAt: nowSeconds() + 60 });
    await expect(verify(token)).resolves.toMatchObject({ kind: "publicJwt" });
    clock.advance(61_000);
    await expect(verify(token)).rejects.toThrow(/expired/);
  });
});

describe("secret key rotation", () => {
  it("keeps the old key working during the grace period and refuses it after", async () => {
    const { projectRef, environments } = await createOtherProject(api, "rotating");
    const oldKey = environments.dev.secretKey;
    const oldJwt = await signJwt(oldKey, { sub: environments.dev.id, pub: true }, { now: nowSeconds(), expiresAt: nowSeconds() + 3 * 86400 });
    const { secretKey: newKey } = await withTransaction(api.db.pool, (tx) =>
      rotateSecretKey(tx, api.engine.secrets, { id: environments.dev.id, slug: "dev" }, clock.now(), 24 * 3_600_000),
    );
    expect(newKey).toMatch(/^svc_dev_/);
    expect(newKey).not.toBe(oldKey);
    const list = (key: string) => api.app.inject({ method: "GET", url: `/api/v1/projects/${projectRef}/envvars/dev`, headers: bearer(key) });

    clock.advance(23 * 3_600_000);
    expect((await list(oldKey)).statusCode).toBe(200);
    expect((await list(newKey)).statusCode).toBe(200);
    await expect(verify(oldJwt)).resolves.toMatchObject({ kind: "publicJwt" });

    clock.advance(2 * 3_600_000);
    const after = await list(oldKey);
    expect(after.statusCode).toBe(401);
    expect(after.json().error).toBe("Invalid API key");
    expect((await list(newKey)).statusCode).toBe(200);
    await expect(verify(oldJwt)).rejects.toThrow(/invalid/);
    // New tokens are signed with the new key.
    const fresh = await signJwt(newKey, { sub: environments.dev.id, pub: true }, { now: nowSeconds() });
    await expect(verify(fresh)).resolves.toMatchObject({ kind: "publicJwt" });
  });
});
