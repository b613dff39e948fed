import type { EngineDeps } from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";

/**
 * The PAT and public-JWT verifiers wired into the app. Filled in by the credentials module
 * (issue #4); until then only secret keys authenticate.
 */
export function credentialVerifiers(_engine: EngineDeps): Pick<AppDeps, "verifyPersonalAccessToken" | "verifyPublicJwt"> {
  return {};
}
