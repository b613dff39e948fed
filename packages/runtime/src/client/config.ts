// What a client call needs to know (credential, base URL, preview branch, request options) and
// how the layers combine: environment variables < configure() < withAuth (outer) < withAuth (inner).
// Everything here is pure: the environment is passed in, never read at import time.

/** Retry behaviour for 408, 429, 5xx and connection failures. */
export interface RetryOptions {
  /** Total attempts, including the first. @default 3 */
  maxAttempts?: number;
  /** Delay before the first retry. @default 1000 */
  minTimeoutInMs?: number;
  /** Upper bound of any delay. @default 30000 */
  maxTimeoutInMs?: number;
  /** Each delay is the previous one times this. @default 2 */
  factor?: number;
  /** Spread delays randomly between 1x and 2x to avoid herds. @default true */
  randomize?: boolean;
}

export interface RequestOptions {
  /** @default { maxAttempts: 3, minTimeoutInMs: 1000, maxTimeoutInMs: 30000, factor: 2, randomize: true } */
  retry?: RetryOptions;
  /** Extra headers sent with every request (they never replace the client's own). @default {} */
  additionalHeaders?: Record<string, string>;
  /** The fetch implementation. @default globalThis.fetch */
  fetch?: typeof fetch;
}

/**
 * Client configuration. Give one credential: a secret key (one environment of one project), a
 * personal access token (`svc_pat_…`, every project its user belongs to) or any other bearer
 * token (`accessToken`, e.g. a public access token).
 */
export interface ClientConfig {
  /** An environment's secret key (`svc_dev_…`, `svc_prod_…`). @default process.env.SERVICE_SECRET_KEY */
  secretKey?: string;
  /** A personal access token (`svc_pat_…`). */
  personalAccessToken?: string;
  /** Any bearer token, e.g. a public access token from `auth.createPublicToken`. */
  accessToken?: string;
  /** Where svc's API listens. @default process.env.SERVICE_API_URL ?? "http://localhost:3030" */
  baseURL?: string;
  /** Preview branch to target (sent as `x-service-branch` and `x-trigger-branch`). @default process.env.SERVICE_PREVIEW_BRANCH */
  previewBranch?: string;
  requestOptions?: RequestOptions;
}

/** A configuration with every layer applied: what one request is sent with. */
export interface ResolvedConfig {
  accessToken: string | undefined;
  baseURL: string;
  previewBranch: string | undefined;
  requestOptions: RequestOptions;
}

export const DEFAULT_BASE_URL = "http://localhost:3030";

export const ENV_SECRET_KEY = "SERVICE_SECRET_KEY";
export const ENV_API_URL = "SERVICE_API_URL";
export const ENV_PREVIEW_BRANCH = "SERVICE_PREVIEW_BRANCH";

const CREDENTIAL_FIELDS = ["secretKey", "personalAccessToken", "accessToken"] as const;

/** The one credential of a config layer; a secret key wins over a PAT, a PAT over an access token. */
export function credentialOf(config: ClientConfig): string | undefined {
  return nonEmpty(config.secretKey) ?? nonEmpty(config.personalAccessToken) ?? nonEmpty(config.accessToken);
}

/** Does this layer say anything about the credential (even `secretKey: undefined`, which clears it)? */
function setsCredential(layer: ClientConfig): boolean {
  return CREDENTIAL_FIELDS.some((field) => Object.prototype.hasOwnProperty.call(layer, field));
}

function has<K extends keyof ClientConfig>(layer: ClientConfig, key: K): boolean {
  return Object.prototype.hasOwnProperty.call(layer, key);
}

function nonEmpty(value: string | undefined): string | undefined {
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/** The bottom layer: what the process environment says, read when a call is made. */
export function configFromEnvironment(env: Record<string, string | undefined>): ResolvedConfig {
  return {
    accessToken: nonEmpty(env[ENV_SECRET_KEY]),
    baseURL: nonEmpty(env[ENV_API_URL]) ?? DEFAULT_BASE_URL,
    previewBranch: nonEmpty(env[ENV_PREVIEW_BRANCH]),
    requestOptions: {},
  };
}

/**
 * Applies one layer over a resolved config. Fields the layer names win (the credential as one
 * field, whichever of its three names is used); fields it leaves out are inherited. So an inner
 * `{ previewBranch }` inside an outer `{ secretKey }` uses both, and an inner `{ secretKey }`
 * replaces an outer `{ accessToken }`.
 */
export function applyLayer(base: ResolvedConfig, layer: ClientConfig): ResolvedConfig {
  return {
    accessToken: setsCredential(layer) ? credentialOf(layer) : base.accessToken,
    baseURL: has(layer, "baseURL") && nonEmpty(layer.baseURL) ? layer.baseURL! : base.baseURL,
    previewBranch: has(layer, "previewBranch") ? nonEmpty(layer.previewBranch) : base.previewBranch,
    requestOptions: has(layer, "requestOptions") ? mergeRequestOptions(base.requestOptions, layer.requestOptions ?? {}) : base.requestOptions,
  };
}

function mergeRequestOptions(base: RequestOptions, layer: RequestOptions): RequestOptions {
  return {
    ...base,
    ...layer,
    retry: { ...base.retry, ...layer.retry },
    additionalHeaders: { ...base.additionalHeaders, ...layer.additionalHeaders },
  };
}

/** Applies layers from outermost to innermost. */
export function resolveConfig(base: ResolvedConfig, layers: readonly ClientConfig[]): ResolvedConfig {
  return layers.reduce(applyLayer, base);
}

/** `process.env` where there is one (Node, Bun, Deno with compat); `{}` elsewhere. */
export function processEnvironment(): Record<string, string | undefined> {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return proc?.env ?? {};
}
