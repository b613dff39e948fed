import { randomUUID } from "node:crypto";
import type { SharedListener } from "@svc/runtime/db";
import type { Clock, Queryable } from "@svc/runtime/engine";
import { RealtimeWatches } from "./realtime-watches.ts";
import { RunChangeHub } from "./run-change-hub.ts";

/**
 * The run change hub of an API process with its watches, routed on `notices` (add before
 * `notices.start()`); its watch maintenance runs until `hub.watches.stop()`.
 */
export function createRunChangeHub(options: { db: Queryable; clock: Clock; notices: SharedListener; onError: (error: unknown, context: string) => void }): RunChangeHub {
  let hub: RunChangeHub | null = null;
  const watches = new RealtimeWatches({
    db: options.db,
    clock: options.clock,
    watcher: `api_${randomUUID()}`,
    onSettled: (environmentId) => hub?.wakeEnvironment(environmentId),
    onError: options.onError,
  });
  hub = new RunChangeHub({ notices: options.notices, watches, onError: options.onError });
  watches.start();
  return hub;
}
