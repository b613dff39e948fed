import { createPool } from "@svc/runtime/db";
import { SecretBox, systemClock, WakeDispatcher, type EngineDeps } from "@svc/runtime/engine";

export interface ConnectEngineOptions {
  /** The Postgres database svc runs on (already migrated by the API or worker). */
  databaseUrl: string;
  /**
   * The server's `SVC_ENCRYPTION_KEY`. Only needed for operations that read secret keys
   * (callback URLs, public tokens); completing tokens does not need it.
   * @default undefined (such operations throw)
   */
  encryptionKey?: string;
  /**
   * Public base URL of the svc API, used to build callback URLs.
   * @default "http://localhost:3030"
   */
  apiUrl?: string;
  /**
   * Size of the connection pool.
   * @default 5
   */
  poolMax?: number;
  /**
   * Told of errors outside any call: a pooled connection that broke while idle. Calls in flight
   * fail with their own errors as usual.
   * @default writes them to stderr (console.error)
   */
  onError?: (error: Error, source: "pool") => void;
}

export interface EngineConnection {
  /** Pass to engine functions such as `completeToken(engine.deps, tx, id, output)`. */
  deps: EngineDeps;
  /** Closes the pool. */
  close(): Promise<void>;
}

/** Stands in when no encryption key was given: fails loudly instead of decrypting garbage. */
class MissingSecretBox extends SecretBox {
  constructor() {
    super("unused");
  }
  override encrypt(): string {
    throw new Error("connectEngine: pass encryptionKey (the server's SVC_ENCRYPTION_KEY) to use secret keys");
  }
  override decrypt(): string {
    return this.encrypt();
  }
}

/**
 * Connects a backend to svc's engine through the shared Postgres, so it can call engine
 * functions inside its own transactions: a token completed with `completeToken` resumes its
 * waiting runs if and only if the backend's transaction commits.
 *
 * @example
 * import { connectEngine } from "@svc/worker";
 * import { withTransaction } from "@svc/runtime/db";
 * import { completeToken } from "@svc/runtime/engine";
 *
 * const engine = await connectEngine({ databaseUrl: process.env.DATABASE_URL! });
 * await withTransaction(engine.deps.db, async (tx) => {
 *   await tx.query("UPDATE orders SET approved = true WHERE id = $1", [orderId]);
 *   await completeToken(engine.deps, tx, tokenId, { approved: true });
 * });
 * await engine.close();
 */
export async function connectEngine(options: ConnectEngineOptions): Promise<EngineConnection> {
  const onError = options.onError ?? ((error, source) => console.error(`svc engine client (${source}):`, error));
  const db = createPool(options.databaseUrl, { max: options.poolMax ?? 5, applicationName: "svc-engine-client", onError: (error) => onError(error, "pool") });
  const deps: EngineDeps = {
    db,
    clock: systemClock,
    dispatcher: new WakeDispatcher(),
    secrets: options.encryptionKey ? new SecretBox(options.encryptionKey) : new MissingSecretBox(),
    apiUrl: options.apiUrl ?? "http://localhost:3030",
  };
  return { deps, close: () => db.end() };
}
