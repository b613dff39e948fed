import { AuthenticationError, type Environment } from "@svc/runtime/engine";
import type { Principal } from "../auth/principal.ts";

/** The environment of an environment-scoped principal (secret key or public JWT). */
export function environmentOf(principal: Principal): Environment {
  if (principal.kind === "personalAccessToken") throw new AuthenticationError("A personal access token cannot be used for this request");
  return principal.environment;
}

/** How the request's credential marks what it triggers: a one-time-use token is recorded (and refused the second time). */
export function oneTimeUseOf(principal: Principal): { oneTimeUseToken?: string } {
  return principal.kind === "publicJwt" && principal.oneTimeUseToken ? { oneTimeUseToken: principal.oneTimeUseToken } : {};
}
