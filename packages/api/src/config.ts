import { z } from "zod";
import { EncryptionKey, settingsProblems } from "@svc/runtime/engine";
import { DEFAULT_LIMITS, type ApiLimits } from "./http/limits.ts";
import { DEFAULT_SUBSCRIPTION_LIMITS } from "./realtime/subscription-limits.ts";

/** API configuration, parsed once from the environment at the entry point. */
export const ApiConfig = z.object({
  DATABASE_URL: z.string().url(),
  PORT: z.coerce.number().int().min(0).max(65535).default(3030),
  HOST: z.string().default("0.0.0.0"),
  /** The address clients outside reach the API at: token callback URLs and packet URLs are built from it. */
  SVC_PUBLIC_URL: z.string().url().optional(),
  /** Read as the public URL when SVC_PUBLIC_URL is not set. */
  SERVICE_API_URL: z.string().url().optional(),
  /** Encrypts secret keys and env var values at rest. */
  SVC_ENCRYPTION_KEY: EncryptionKey,
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  DB_POOL_MAX: z.coerce.number().int().min(1).default(20),
  /** Routes without credentials (callback and packet URLs): requests per second per client address; 0 turns the limit off. */
  RATE_LIMIT_PUBLIC_PER_SECOND: z.coerce.number().min(0).default(50),
  /** Requests an idle address may make at once on those routes. */
  RATE_LIMIT_PUBLIC_BURST: z.coerce.number().int().min(1).default(100),
  /** Client addresses the rate limiter remembers (about 150 bytes each). */
  RATE_LIMIT_ADDRESSES: z.coerce.number().int().min(1).default(50_000),
  /** Failed dashboard sign-ins per minute per client address (the burst is the same number); 0 turns the limit off. */
  LOGIN_ATTEMPTS_PER_MINUTE: z.coerce.number().int().min(0).default(10),
  /** Failed dashboard sign-ins per minute per token prefix (`svc_pat_` and 8 more characters), from any address; 0 turns it off. */
  LOGIN_ATTEMPTS_PER_TOKEN_PER_MINUTE: z.coerce.number().int().min(0).default(5),
  /** Session channel subscriptions (SSE) a public token may hold open at once; 0: no limit. */
  SSE_SUBSCRIPTIONS_PER_TOKEN: z.coerce.number().int().min(0).default(DEFAULT_SUBSCRIPTION_LIMITS.perPublicToken!),
  /** Session channel subscriptions public tokens may hold open at once from one client address; 0: no limit. */
  SSE_SUBSCRIPTIONS_PER_ADDRESS: z.coerce.number().int().min(0).default(DEFAULT_SUBSCRIPTION_LIMITS.perAddress!),
  /** Live realtime run subscriptions (GET /realtime/v1/runs…, long polls) a public token may hold open at once; 0: no limit. */
  REALTIME_SUBSCRIPTIONS_PER_TOKEN: z.coerce.number().int().min(0).default(DEFAULT_SUBSCRIPTION_LIMITS.perPublicToken!),
  /** Live realtime run subscriptions public tokens may hold open at once from one client address; 0: no limit. */
  REALTIME_SUBSCRIPTIONS_PER_ADDRESS: z.coerce.number().int().min(0).default(DEFAULT_SUBSCRIPTION_LIMITS.perAddress!),
  /** Packet upload bytes held in memory at once, across all uploads. */
  PACKET_UPLOAD_BUFFER_MB: z.coerce.number().int().min(1).default(128),
  /** Take the client address from X-Forwarded-For: set it behind a proxy you trust. */
  TRUST_PROXY: z.enum(["true", "false", "1", "0"]).default("false").transform((value) => value === "true" || value === "1"),
  /** Print unhandled errors (500s) whole on stderr besides the log: any non-empty value but "false"/"0". */
  /** When set, GET /metrics requires `Authorization: Bearer <METRICS_TOKEN>`; unset (or empty), it is open. */
  METRICS_TOKEN: z.preprocess((value) => (value === "" ? undefined : value), z.string().optional()),
  SVC_DEBUG_ERRORS: z.string().optional().transform((value) => value !== undefined && value !== "" && value !== "false" && value !== "0"),
});
export type ApiConfig = z.infer<typeof ApiConfig>;

export function parseApiConfig(env: NodeJS.ProcessEnv): ApiConfig {
  const result = ApiConfig.safeParse(env);
  if (!result.success) {
    const lines = settingsProblems(result.error.issues, env).map((line) => `  ${line}`).join("\n");
    throw new Error(`invalid API configuration (environment variables; all of them: docs/configuration.md):\n${lines}`);
  }
  return result.data;
}

/** The base of every URL the API hands out (callbacks, packets, the OpenAPI document's server). */
export function publicUrlOf(config: ApiConfig): string {
  return config.SVC_PUBLIC_URL ?? config.SERVICE_API_URL ?? `http://localhost:${config.PORT}`;
}

/** The API's limits as createApp takes them. */
export function limitsFromConfig(config: ApiConfig): ApiLimits {
  return {
    publicRateLimit:
      config.RATE_LIMIT_PUBLIC_PER_SECOND > 0
        ? { perSecond: config.RATE_LIMIT_PUBLIC_PER_SECOND, burst: config.RATE_LIMIT_PUBLIC_BURST, maxAddresses: config.RATE_LIMIT_ADDRESSES }
        : null,
    loginRateLimit: loginRateLimitOf(config),
    subscriptions: { perPublicToken: config.SSE_SUBSCRIPTIONS_PER_TOKEN || null, perAddress: config.SSE_SUBSCRIPTIONS_PER_ADDRESS || null },
    runSubscriptions: { perPublicToken: config.REALTIME_SUBSCRIPTIONS_PER_TOKEN || null, perAddress: config.REALTIME_SUBSCRIPTIONS_PER_ADDRESS || null },
    realtimeLivePollMs: DEFAULT_LIMITS.realtimeLivePollMs,
    packetUploadBufferBytes: config.PACKET_UPLOAD_BUFFER_MB * 1024 * 1024,
    requestTimeoutMs: DEFAULT_LIMITS.requestTimeoutMs,
  };
}

/** The dashboard's sign-in throttle: off when both of its limits are 0. */
function loginRateLimitOf(config: ApiConfig): ApiLimits["loginRateLimit"] {
  const perMinute = (n: number) => (n > 0 ? { perSecond: n / 60, burst: n, maxAddresses: config.RATE_LIMIT_ADDRESSES } : null);
  const perAddress = perMinute(config.LOGIN_ATTEMPTS_PER_MINUTE);
  const perTokenPrefix = perMinute(config.LOGIN_ATTEMPTS_PER_TOKEN_PER_MINUTE);
  return perAddress || perTokenPrefix ? { perAddress, perTokenPrefix } : null;
}
