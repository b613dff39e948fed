import { AuthenticationError, type Environment } from "@svc/runtime/engine";
import type { Principal } from "../auth/principal.ts";

/** The environment of an environment-scoped principal (secret key or public JWT). */
export function environmentOf(principal: Principal): Environment {
  if (principal.kind === "personalAccessToken") throw new AuthenticationError("A personal access token cannot be used for this request");
  return principal.environment;
}
