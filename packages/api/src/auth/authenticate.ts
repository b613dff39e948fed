import type { FastifyRequest } from "fastify";
import {
  AuthenticationError,
  findEnvironmentBySecretKey,
  findSecretKey,
  getBranchEnvironment,
  sanitizeBranchName,
  type Environment,
} from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";
import { bearerToken, classifyCredential, type CredentialKind, type Principal } from "./principal.ts";

/** The branch a request targets: x-service-branch wins over x-trigger-branch (what the SDK sends). */
export function requestedBranch(request: FastifyRequest): string | null {
  const header = (name: string) => {
    const v = request.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  return sanitizeBranchName(header("x-service-branch") ?? header("x-trigger-branch"));
}

/**
 * A secret key addresses its environment; on the preview environment a branch header re-points
 * it at that preview branch (the header is ignored for dev, staging and prod).
 */
async function environmentForSecretKey(deps: AppDeps, request: FastifyRequest, key: string): Promise<Environment> {
  const now = deps.engine.clock.now();
  const env = deps.secretKeys
    ? await deps.secretKeys.environmentFor(key, now, () => findSecretKey(deps.engine.db, key, now))
    : await findEnvironmentBySecretKey(deps.engine.db, key, now);
  if (!env) throw new AuthenticationError("Invalid API key");
  const branch = requestedBranch(request);
  if (env.slug !== "preview" || !branch || env.parentEnvironmentId) return env;
  const branchEnv = await getBranchEnvironment(deps.engine.db, env.id, branch);
  if (!branchEnv) throw new AuthenticationError(`No preview branch named "${branch}"`);
  return branchEnv;
}

export interface AuthRequirement {
  /** Credential kinds this route accepts; others get 401. */
  allow: CredentialKind[];
}

/** Authenticates the request into a Principal or throws AuthenticationError (401). */
export async function authenticate(deps: AppDeps, request: FastifyRequest, requirement: AuthRequirement): Promise<Principal> {
  const token = bearerToken(request.headers.authorization);
  if (!token) throw new AuthenticationError("Invalid or Missing API key");
  const kind = classifyCredential(token);
  if (kind === "secretKey" && requirement.allow.includes("secretKey")) {
    return { kind: "secretKey", environment: await environmentForSecretKey(deps, request, token) };
  }
  if (kind === "personalAccessToken" && requirement.allow.includes("personalAccessToken") && deps.verifyPersonalAccessToken) {
    const userId = await deps.verifyPersonalAccessToken(token);
    if (!userId) throw new AuthenticationError("Invalid or Missing PAT");
    return { kind: "personalAccessToken", userId };
  }
  if (kind === "publicJwt" && requirement.allow.includes("publicJwt") && deps.verifyPublicJwt) {
    return deps.verifyPublicJwt(token);
  }
  throw new AuthenticationError(kind === "unknown" ? "Invalid API key" : `This credential (${kind}) is not accepted for this request`);
}
