import { z } from "zod";

/** API configuration, parsed once from the environment at the entry point. */
export const ApiConfig = z.object({
  DATABASE_URL: z.string().url(),
  PORT: z.coerce.number().int().min(0).max(65535).default(3030),
  HOST: z.string().default("0.0.0.0"),
  /** Public base URL (callback URLs are built from it). */
  SERVICE_API_URL: z.string().url().optional(),
  /** Encrypts secret keys and env var values at rest. */
  SVC_ENCRYPTION_KEY: z.string().min(16, "SVC_ENCRYPTION_KEY must be at least 16 characters"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  DB_POOL_MAX: z.coerce.number().int().min(1).default(20),
});
export type ApiConfig = z.infer<typeof ApiConfig>;

export function parseApiConfig(env: NodeJS.ProcessEnv): ApiConfig {
  const result = ApiConfig.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`).join("\n");
    throw new Error(`invalid API configuration:\n${lines}`);
  }
  return result.data;
}
