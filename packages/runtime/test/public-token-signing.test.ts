import { jwtVerify, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { JWT_AUDIENCE, JWT_ISSUER, signEnvironmentToken } from "../src/engine/index.ts";

const at = new Date("2026-11-25T12:00:00.500Z");
const env = { id: "env_0123456789abcdefghijklmn" };

/** What the engine signed with before: jose's SignJWT over the same claims. */
function joseToken(key: string, scopes: string[], expiresInSeconds: number): Promise<string> {
  const now = Math.floor(at.getTime() / 1000);
  return new SignJWT({ pub: true, scopes })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(env.id)
    .setIssuer(JWT_ISSUER)
    .setAudience(JWT_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + expiresInSeconds)
    .sign(new TextEncoder().encode(key));
}

describe("signEnvironmentToken", () => {
  it("produces exactly the bytes jose's SignJWT produces, for plain, many and non-ASCII scopes and keys", async () => {
    const cases: [string, string[], number][] = [
      ["tr_dev_secretsecretsecretsecret", ["read:runs:run_abc"], 3600],
      ["tr_prod_Ω≈ç√∫˜µ≤≥÷", ["write:waitpoints:waitpoint_1", "read:sessions:s/ä ü", "read:runs"], 86_400],
      ["k", [], 1],
    ];
    for (const [key, scopes, seconds] of cases) {
      expect(signEnvironmentToken(key, at, env, scopes, seconds)).toBe(await joseToken(key, scopes, seconds));
    }
  });

  it("verifies with jose under its key, issuer and audience, with the claims asked for", async () => {
    const key = "tr_dev_verifyme";
    const token = signEnvironmentToken(key, new Date(), env, ["read:runs:run_1"], 600);
    const { payload, protectedHeader } = await jwtVerify(token, new TextEncoder().encode(key), { issuer: JWT_ISSUER, audience: JWT_AUDIENCE, algorithms: ["HS256"] });
    expect(protectedHeader).toEqual({ alg: "HS256" });
    expect(payload).toMatchObject({ pub: true, scopes: ["read:runs:run_1"], sub: env.id });
    expect(payload.exp! - payload.iat!).toBe(600);
  });

  it("does not verify under another key, nor once expired", async () => {
    const token = signEnvironmentToken("tr_dev_one", new Date(), env, ["read:runs"], 600);
    await expect(jwtVerify(token, new TextEncoder().encode("tr_dev_two"))).rejects.toThrow(/signature/);
    const old = signEnvironmentToken("tr_dev_one", new Date(Date.now() - 7_200_000), env, ["read:runs"], 3600);
    await expect(jwtVerify(old, new TextEncoder().encode("tr_dev_one"))).rejects.toThrow(/exp/);
  });
});
