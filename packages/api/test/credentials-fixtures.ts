import { SignJWT } from "jose";
import { withTransaction } from "@svc/runtime/db";
import {
  addOrganizationMember,
  addProjectMember,
  createBranch,
  createPersonalAccessToken,
  createProject,
  createUser,
  ensureOrganization,
  getProjectByRef,
  type ProjectCredentials,
} from "@svc/runtime/engine";
import { JWT_AUDIENCE, JWT_ISSUER } from "../src/auth/public-tokens.ts";
import type { TestApi } from "./harness.ts";

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A second project in its own organisation. */
export async function createOtherProject(api: TestApi, slug = "other"): Promise<ProjectCredentials> {
  return withTransaction(api.db.pool, async (tx) => {
    const organizationId = await ensureOrganization(tx, `${slug}-org`);
    return createProject(tx, api.engine.secrets, { organizationId, name: `${slug} project`, slug });
  });
}

/** A user with a PAT; `member` adds them to that project (or, with `viaOrganization`, to its org). */
export async function createUserWithPat(
  api: TestApi,
  email: string,
  options: { memberOf?: string[]; viaOrganization?: boolean } = {},
): Promise<{ userId: string; pat: string }> {
  const user = await createUser(api.db.pool, { email });
  for (const ref of options.memberOf ?? []) {
    const project = await getProjectByRef(api.db.pool, ref);
    if (options.viaOrganization) await addOrganizationMember(api.db.pool, project.organizationId, user.id);
    else await addProjectMember(api.db.pool, project.id, user.id);
  }
  const { token } = await createPersonalAccessToken(api.db.pool, user.id, "test");
  return { userId: user.id, pat: token };
}

export async function createPreviewBranch(api: TestApi, projectRef: string, name: string): Promise<string> {
  return (await createBranch(api.db.pool, projectRef, name)).environment.id;
}

/** Signs a public token the way the published SDK does (HS256, raw secret key, fixed iss/aud). */
export async function signJwt(
  secretKey: string,
  claims: Record<string, unknown>,
  options: { expiresAt?: number; now?: number; issuer?: string | null; audience?: string | null } = {},
): Promise<string> {
  const now = options.now ?? Math.floor(Date.now() / 1000);
  let jwt = new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuedAt(now);
  if (options.issuer !== null) jwt = jwt.setIssuer(options.issuer ?? JWT_ISSUER);
  if (options.audience !== null) jwt = jwt.setAudience(options.audience ?? JWT_AUDIENCE);
  if (options.expiresAt !== -1) jwt = jwt.setExpirationTime(options.expiresAt ?? now + 900);
  return jwt.sign(new TextEncoder().encode(secretKey));
}

/** `alg: none`: a header and payload with an empty signature. */
export function unsignedJwt(claims: Record<string, unknown>): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part({ alg: "none", typ: "JWT" })}.${part({ iss: JWT_ISSUER, aud: JWT_AUDIENCE, exp: Math.floor(Date.now() / 1000) + 900, ...claims })}.`;
}

/** Flips one character of the payload, keeping the original signature. */
export function tamperedJwt(token: string, claims: Record<string, unknown>): string {
  const [header, payload, signature] = token.split(".");
  const decoded = JSON.parse(Buffer.from(payload!, "base64url").toString("utf8"));
  return `${header}.${Buffer.from(JSON.stringify({ ...decoded, ...claims })).toString("base64url")}.${signature}`;
}
