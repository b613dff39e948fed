// An explicit client: owns its credential, base URL and preview branch, isolated from configure(),
// withAuth() and every other instance. The global functions use one built from the ambient config.
import { applyLayer, configFromEnvironment, processEnvironment, type ClientConfig, type ResolvedConfig } from "./config.ts";
import { BatchesResource } from "./batches.ts";
import { ConcurrencyLimitsResource } from "./concurrency-limits.ts";
import { EnvVarsResource } from "./envvars.ts";
import { HttpTransport } from "./http.ts";
import { IdempotencyKeysResource } from "./idempotency-keys.ts";
import { flattenScopes, signPublicToken, type Expiration, type PublicTokenScopes } from "./public-tokens.ts";
import { RunsResource } from "./runs.ts";
import { SchedulesResource } from "./schedules.ts";
import { QueuesResource } from "./queues.ts";
import { SessionsResource } from "./sessions.ts";
import { StreamsResource } from "./streams.ts";
import { TasksResource } from "./tasks.ts";
import { WaitpointsResource } from "./waitpoints.ts";

export interface CreatePublicTokenOptions {
  /** What the token may do; an empty object grants nothing. @default {} */
  scopes?: PublicTokenScopes;
  /** A duration ("15m", "2h"), seconds from now, or a Date. @default "1h" */
  expirationTime?: Expiration;
}

export interface CreateTriggerTokenOptions {
  /** @default "1h" */
  expirationTime?: Expiration;
  /**
   * By default the token triggers once (claim `otu: true`; a second use is a 422), as the
   * published SDK's. `true` lets it trigger until it expires. @default false
   */
  multipleUse?: boolean;
}

/**
 * A client with its own configuration. Fields it leaves out fall back to the environment
 * variables (`SERVICE_API_URL`, `SERVICE_SECRET_KEY`, `SERVICE_PREVIEW_BRANCH`), never to configure().
 *
 * @example
 * const prod = new ApiClient({ secretKey: process.env.PROD_KEY, baseURL: "https://svc.example.com" });
 * const staging = new ApiClient({ secretKey: process.env.STAGING_KEY, baseURL: "https://svc.example.com" });
 * await prod.tasks.trigger("send-email", { to: "ada@example.com" });
 * for await (const run of staging.runs.list({ status: "FAILED" })) console.log(run.id);
 */
/** @internal A configuration already resolved (the global functions resolve it per call). */
export class FixedConfig {
  constructor(readonly resolved: ResolvedConfig) {}
}

export class ApiClient {
  readonly tasks: TasksResource;
  readonly runs: RunsResource;
  readonly batches: BatchesResource;
  readonly idempotencyKeys: IdempotencyKeysResource;
  readonly envvars: EnvVarsResource;
  readonly schedules: SchedulesResource;
  readonly queues: QueuesResource;
  readonly concurrencyLimits: ConcurrencyLimitsResource;
  readonly waitpoints: WaitpointsResource;
  readonly sessions: SessionsResource;
  readonly streams: StreamsResource;
  readonly #resolve: () => ResolvedConfig;

  constructor(config: ClientConfig | FixedConfig = {}) {
    if (config instanceof FixedConfig) {
      this.#resolve = () => config.resolved;
    } else {
      const own = { ...config };
      this.#resolve = () => applyLayer(configFromEnvironment(processEnvironment()), own);
    }
    const connect = () => new HttpTransport(this.#resolve());
    this.tasks = new TasksResource(connect);
    this.runs = new RunsResource(connect);
    this.batches = new BatchesResource(connect);
    this.idempotencyKeys = new IdempotencyKeysResource(connect);
    this.envvars = new EnvVarsResource(connect);
    this.schedules = new SchedulesResource(connect);
    this.queues = new QueuesResource(connect);
    this.concurrencyLimits = new ConcurrencyLimitsResource(connect);
    this.waitpoints = new WaitpointsResource(connect);
    this.sessions = new SessionsResource(connect);
    this.streams = new StreamsResource(connect);
  }

  /** The configuration this client's next call is sent with (credential, base URL, branch). */
  get config(): ResolvedConfig {
    return this.#resolve();
  }

  /**
   * Mints a public access token for browsers or other backends, signed locally with this
   * client's secret key after asking the server for the environment's claims.
   *
   * @example
   * const token = await client.createPublicToken({ scopes: { read: { runs: [run.id] } }, expirationTime: "15m" });
   */
  async createPublicToken(options: CreatePublicTokenOptions = {}): Promise<string> {
    return this.#signToken(options);
  }

  async #signToken(options: CreatePublicTokenOptions, extraClaims?: Record<string, unknown>): Promise<string> {
    const http = new HttpTransport(this.config);
    const secretKey = http.requireAccessToken("auth.createPublicToken");
    const { data: claims } = await http.request<Record<string, unknown>>({ method: "POST", path: "/api/v1/auth/jwt/claims", body: {} });
    if (typeof claims !== "object" || claims === null || Array.isArray(claims)) {
      throw new TypeError("auth.createPublicToken: the server's claims are not a JSON object");
    }
    return signPublicToken({
      secretKey,
      claims,
      scopes: flattenScopes(options.scopes ?? {}),
      ...(options.expirationTime !== undefined ? { expirationTime: options.expirationTime } : {}),
      ...(extraClaims ? { extraClaims } : {}),
    });
  }

  /**
   * Mints a token that may trigger the given task(s) and nothing else (scope `trigger:tasks:<id>`),
   * once unless `multipleUse`.
   *
   * @example
   * const token = await client.createTriggerPublicToken("upload-avatar");
   */
  createTriggerPublicToken(taskId: string | string[], options: CreateTriggerTokenOptions = {}): Promise<string> {
    return this.#signToken({ scopes: { trigger: { tasks: taskId } }, ...expiry(options) }, options.multipleUse ? undefined : { otu: true });
  }

  /**
   * Mints a token that may batch-trigger the given task(s) (scope `batchTrigger:tasks:<id>`), once
   * unless `multipleUse`.
   *
   * @example
   * const token = await client.createBatchTriggerPublicToken(["resize", "thumbnail"]);
   */
  createBatchTriggerPublicToken(taskId: string | string[], options: CreateTriggerTokenOptions = {}): Promise<string> {
    return this.#signToken({ scopes: { batchTrigger: { tasks: taskId } }, ...expiry(options) }, options.multipleUse ? undefined : { otu: true });
  }
}

function expiry(options: CreateTriggerTokenOptions): Pick<CreatePublicTokenOptions, "expirationTime"> {
  return options.expirationTime !== undefined ? { expirationTime: options.expirationTime } : {};
}
