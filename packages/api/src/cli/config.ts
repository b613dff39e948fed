import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { EncryptionKey } from "@svc/runtime/engine";

/** Where `svc dev` records the database, keys and API it uses: `.svc/runtime.json` in the project (SVC_STATE_DIR). */
export function defaultRuntimeFile(env: NodeJS.ProcessEnv): string {
  return join(env.SVC_STATE_DIR || resolve(".svc"), "runtime.json");
}

/** What the runtime file that `svc dev` writes holds: the operator commands read the first two, `svc runs`/`svc tokens` the last two. */
const RuntimeFile = z
  .object({ databaseUrl: z.string().optional(), encryptionKey: z.string().optional(), apiUrl: z.string().optional(), secretKey: z.string().optional() })
  .passthrough();
export type RuntimeFile = z.infer<typeof RuntimeFile>;

const CliConfig = z.object({
  databaseUrl: z.string({ error: "DATABASE_URL is not set (and no .svc/runtime.json names a database; run `svc dev` (or `pnpm start` in svc's repository) once in this folder, or set DATABASE_URL)" }).url("DATABASE_URL is not a URL"),
  encryptionKey: z
    .string({ error: "SVC_ENCRYPTION_KEY is not set (and no .svc/runtime.json provides one); use the same key as the API" })
    .pipe(EncryptionKey),
});
export type CliConfig = z.infer<typeof CliConfig>;

export class ConfigError extends Error {}

/** The runtime file SVC_RUNTIME_FILE names, else `.svc/runtime.json`; empty when there is none. */
export function readRuntimeFile(env: NodeJS.ProcessEnv): RuntimeFile & { path: string } {
  const path = env.SVC_RUNTIME_FILE || defaultRuntimeFile(env);
  return { ...readRuntimeFileAt(path), path };
}

function readRuntimeFileAt(path: string): RuntimeFile {
  if (!existsSync(path)) return {};
  try {
    return RuntimeFile.parse(JSON.parse(readFileSync(path, "utf8")));
  } catch (error) {
    throw new ConfigError(`${path} is not valid: ${(error as Error).message}`);
  }
}

/**
 * CLI configuration, parsed once: DATABASE_URL and SVC_ENCRYPTION_KEY from the environment; each
 * missing one is taken from the runtime file (SVC_RUNTIME_FILE, default `.svc/runtime.json`).
 */
export function parseCliConfig(env: NodeJS.ProcessEnv): CliConfig {
  const file = readRuntimeFile(env);
  const result = CliConfig.safeParse({
    databaseUrl: env.DATABASE_URL || file.databaseUrl,
    encryptionKey: env.SVC_ENCRYPTION_KEY || file.encryptionKey,
  });
  if (!result.success) throw new ConfigError(result.error.issues.map((i) => i.message).join("; "));
  return result.data;
}
