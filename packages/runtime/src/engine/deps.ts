import type { Pool } from "../db/queryable.ts";
import type { Clock } from "../clock.ts";
import type { Dispatcher } from "./dispatch.ts";
import type { SecretBox } from "./tenancy/secret-box.ts";

/** Everything the engine needs, passed as one object; no module-level singletons. */
export interface EngineDeps {
  db: Pool;
  clock: Clock;
  dispatcher: Dispatcher;
  secrets: SecretBox;
  /** Public base URL of the API, used to build waitpoint callback URLs. */
  apiUrl: string;
}
