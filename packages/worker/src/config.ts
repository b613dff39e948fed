import { z } from "zod";
import {
  DEFAULT_RETENTION_PACE, DEFAULT_RUN_RETENTION_DAYS, EncryptionKey, settingsProblems, MAX_RETENTION_BATCH_SIZE, MAX_RETENTION_REST_RATIO, MAX_RUN_RETENTION_DAYS, MIN_RETENTION_BATCH_SIZE,
} from "@svc/runtime/engine";

/** Unset or empty: the default. */
const blankAsUnset = (value: unknown) => (value === "" ? undefined : value);

/** Worker configuration, parsed once from the environment at the entry point. */
export const WorkerConfig = z.object({
  DATABASE_URL: z.string().url(),
  SVC_ENCRYPTION_KEY: EncryptionKey,
  /** The secret key of the environment this worker serves; without it, the default project's dev environment. */
  SERVICE_SECRET_KEY: z.string().optional(),
  /** For a preview environment: the branch this worker serves. */
  SERVICE_PREVIEW_BRANCH: z.string().optional(),
  /** Where task code reaches the API (tasks.trigger, runs.* inside a run): inside a cluster, its internal address. */
  SERVICE_API_URL: z.string().url().default("http://localhost:3030"),
  /** The API's public address, for the callback URLs of tokens created in runs; defaults to SERVICE_API_URL. */
  SVC_PUBLIC_URL: z.string().url().optional(),
  /** Path of the project config (which names the task folders); default: svc.config.ts, .mts, .js or .mjs in the working directory. */
  SVC_CONFIG: z
    .string()
    .optional()
    .transform((value) => value || undefined),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(10),
  /** Recorded on every run this worker executes; defaults to a hash of the task files. */
  WORKER_VERSION: z.string().optional(),
  /** How long a resumed run's worker may go silent before the run is restarted elsewhere. */
  WORKER_LEASE_MS: z.coerce.number().int().min(1000).default(15_000),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).default(30_000),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  DB_POOL_MAX: z.coerce.number().int().min(2).default(20),
  /** Serve GET /metrics (Prometheus) on this port; unset (or empty): no metrics server. */
  WORKER_METRICS_PORT: z.preprocess((value) => (value === "" ? undefined : value), z.coerce.number().int().min(0).max(65535).optional()),
  /**
   * Days finished runs (with their attempts, ledger, waitpoints, batches, packets) are kept in
   * environments without a setting of their own (`svc retention set`); 0 keeps them forever.
   */
  RUN_RETENTION_DAYS: z.preprocess(blankAsUnset, z.coerce.number().int().min(0).max(MAX_RUN_RETENTION_DAYS).default(DEFAULT_RUN_RETENTION_DAYS)),
  /** How often each environment is swept for runs past their retention (one worker sweeps each environment). */
  RUN_RETENTION_INTERVAL_SECONDS: z.preprocess(blankAsUnset, z.coerce.number().int().min(1).max(86_400).default(600)),
  /** Rows the retention sweep deletes per statement, each statement in a transaction of its own. */
  RUN_RETENTION_BATCH_SIZE: z.preprocess(
    blankAsUnset,
    z.coerce.number().int().min(MIN_RETENTION_BATCH_SIZE).max(MAX_RETENTION_BATCH_SIZE).default(DEFAULT_RETENTION_PACE.batchSize),
  ),
  /**
   * After each batch the sweep rests this many times as long as the batch took (0: no rest), so that
   * it takes at most 1 / (1 + ratio) of a connection's time from triggers and resumes.
   */
  RUN_RETENTION_REST_RATIO: z.preprocess(blankAsUnset, z.coerce.number().finite().min(0).max(MAX_RETENTION_REST_RATIO).default(DEFAULT_RETENTION_PACE.restRatio)),
  /** "true": a line at info per run start, wait, resume, failure and completion (`svc dev` sets it); otherwise those lines are at debug. */
  WORKER_LOG_RUNS: z.preprocess(blankAsUnset, z.enum(["true", "false"]).default("false")).transform((value) => value === "true"),
  /** When set, GET /metrics requires `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.preprocess((value) => (value === "" ? undefined : value), z.string().optional()),
});
export type WorkerConfig = z.infer<typeof WorkerConfig>;

export function parseWorkerConfig(env: NodeJS.ProcessEnv): WorkerConfig {
  const result = WorkerConfig.safeParse(env);
  if (!result.success) {
    const lines = settingsProblems(result.error.issues, env).map((line) => `  ${line}`).join("\n");
    throw new Error(`invalid worker configuration (environment variables; all of them: docs/configuration.md):\n${lines}`);
  }
  return result.data;
}
