import type { EngineDeps } from "@svc/runtime/engine";
import type { Principal } from "./auth/principal.ts";
import type { SecretKeyCache } from "./auth/secret-key-cache.ts";
import type { SessionStreamHub } from "./realtime/session-stream-hub.ts";
import type { RunChangeHub } from "./realtime/run-change-hub.ts";
import type { ApiMetrics } from "./metrics/api-metrics.ts";

export interface AppDeps {
  engine: EngineDeps;
  /** Returns the user id of a valid PAT, or null. Supplied by the credentials module. */
  verifyPersonalAccessToken?: (token: string) => Promise<string | null>;
  /** Verifies a public JWT into a principal, or throws AuthenticationError. */
  verifyPublicJwt?: (token: string) => Promise<Extract<Principal, { kind: "publicJwt" }>>;
  /** Remembers which environment a secret key opens (see SecretKeyCache); without it, every request looks the key up. */
  secretKeys?: SecretKeyCache;
  /** Live delivery of session channel records to this process's SSE subscribers (one LISTEN connection). */
  sessionStreams?: SessionStreamHub;
  /** Live delivery of runs' realtime stream chunks to this process's SSE subscribers (the same hub, over run_stream_records). */
  runStreams?: SessionStreamHub;
  /**
   * Wakes live realtime run requests when their runs change (one LISTEN connection). Without it
   * a live request answers when its long poll ends, and the next one reads what changed.
   */
  runChanges?: RunChangeHub;
  /** The process's metrics: with them, requests are timed and GET /metrics serves them; without, neither. */
  metrics?: ApiMetrics;
}
