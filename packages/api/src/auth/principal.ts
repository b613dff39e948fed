import type { Environment } from "@svc/runtime/engine";

/** Who is calling, decided once per request from the bearer credential. */
export type Principal =
  | { kind: "secretKey"; environment: Environment }
  | { kind: "personalAccessToken"; userId: string }
  | {
      kind: "publicJwt";
      environment: Environment;
      scopes: string[];
      claims: Record<string, unknown>;
      /** For a one-time-use token (`otu: true`): its SHA-256, recorded by the run or batch it creates. */
      oneTimeUseToken?: string;
    };

export type CredentialKind = Principal["kind"];

/** Classifies a bearer token by its shape, once. */
export function classifyCredential(token: string): "secretKey" | "personalAccessToken" | "publicJwt" | "unknown" {
  if (token.startsWith("svc_pat_")) return "personalAccessToken";
  if (/^svc_(dev|stg|prod|preview)_/.test(token)) return "secretKey";
  if (token.split(".").length === 3) return "publicJwt";
  return "unknown";
}

export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const token = header.replace(/^Bearer\s+/i, "").trim();
  return token.length > 0 ? token : null;
}
