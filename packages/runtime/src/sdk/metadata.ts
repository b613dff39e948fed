import type { MetadataOperation } from "../engine/metadata/operations.ts";
import { currentExecution } from "./run-context.ts";
import { metadataStream } from "./streams.ts";

/** A JSON value as metadata stores it (a Date becomes its ISO string, `undefined` inside objects is dropped). */
function jsonValue(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

/** The operations `metadata.*`, `metadata.parent.*` and `metadata.root.*` have in common. */
export interface MetadataUpdater {
  /** Sets a key (or a `$.path` whose parent exists). */
  set(key: string, value: unknown): MetadataUpdater;
  /** Removes a key. */
  del(key: string): MetadataUpdater;
  /** Appends to the array at `key` (a missing key becomes `[value]`). */
  append(key: string, value: unknown): MetadataUpdater;
  /** Removes every element deep-equal to `value` from the array at `key`. */
  remove(key: string, value: unknown): MetadataUpdater;
  /** Adds to the number at `key` (missing: 0). @default value 1 */
  increment(key: string, value?: number): MetadataUpdater;
  /** Subtracts from the number at `key`. @default value 1 */
  decrement(key: string, value?: number): MetadataUpdater;
}

/** Applies one operation to the current run's metadata (nothing outside a run, as in Trigger.dev). */
function change(target: "self" | "parent" | "root", op: MetadataOperation): void {
  currentExecution()?.metadata.add(target, op);
}

function updater(target: "self" | "parent" | "root"): MetadataUpdater & { update(value: Record<string, unknown>): MetadataUpdater } {
  const self = {
    set(key: string, value: unknown) {
      const json = jsonValue(value);
      change(target, json === undefined ? { type: "delete", key } : { type: "set", key, value: json });
      return self;
    },
    del(key: string) {
      change(target, { type: "delete", key });
      return self;
    },
    append(key: string, value: unknown) {
      change(target, { type: "append", key, value: jsonValue(value) ?? null });
      return self;
    },
    remove(key: string, value: unknown) {
      change(target, { type: "remove", key, value: jsonValue(value) ?? null });
      return self;
    },
    increment(key: string, value = 1) {
      change(target, { type: "increment", key, value });
      return self;
    },
    decrement(key: string, value = 1) {
      change(target, { type: "increment", key, value: -Math.abs(value) });
      return self;
    },
    update(value: Record<string, unknown>) {
      change(target, { type: "update", value: jsonValue(value) as Record<string, unknown> });
      return self;
    },
  };
  return self;
}

const own = updater("self");

/**
 * The current run's metadata (Trigger.dev's `metadata`): a JSON object of at most 256 KiB that
 * runs.retrieve, `GET /api/v1/runs/{id}/metadata` and realtime subscribers (`runs.subscribeToRun`,
 * `useRealtimeRun`) see. Inside a run, changes apply at once to the copy `current()` reads and
 * are stored every second, before each wait and when the attempt ends (`flush()` stores them
 * now). Outside a run the changes do nothing and `current()` is undefined, as in Trigger.dev.
 *
 * Replays: an operation the code makes before a wait is applied once, however often the code
 * before the wait runs again (each is numbered in call order; the run stores how many it has).
 * A retry after a failure runs the code again and applies its operations again. Reads give the
 * run's metadata as it is now, not as it was when a replayed line first ran.
 *
 * `parent` and `root` change the metadata of the run that triggered this one and of the first
 * run of its tree (this run itself when it has no parent).
 *
 * @example
 * await metadata.set("progress", 0.1).append("logs", "started");
 * metadata.increment("processed", items.length);
 * metadata.parent.increment("childrenDone");
 * const user = metadata.get("user"); // from tasks.trigger(…, { metadata: { user } })
 * await metadata.flush();
 */
export const metadata = {
  /** The current run's metadata (undefined outside a run). */
  current(): Record<string, unknown> | undefined {
    return currentExecution()?.metadata.current();
  },
  /** One key of the current run's metadata. */
  get(key: string): unknown {
    return currentExecution()?.metadata.current()[key];
  },
  set: own.set,
  del: own.del,
  append: own.append,
  remove: own.remove,
  increment: own.increment,
  decrement: own.decrement,
  /** Replaces the whole metadata object. */
  replace(value: Record<string, unknown>): void {
    own.update(value);
  },
  /** @deprecated Trigger.dev's old name of `replace`. */
  save(value: Record<string, unknown>): void {
    own.update(value);
  },
  /** Stores the changes made so far now (they are stored every second and at the end anyway). */
  async flush(): Promise<void> {
    await currentExecution()?.metadata.flush();
  },
  /** Stores the changes, then reads the run's metadata again (to see changes made from outside the run). */
  async refresh(): Promise<void> {
    await currentExecution()?.metadata.refresh();
  },
  /** Trigger.dev's older name of `streams.pipe(key, source)`: resolves to the source's values, for the run's own use. */
  stream: metadataStream,
  /** The parent run's metadata (this run's own when it has no parent). */
  parent: updater("parent"),
  /** The root run's metadata (this run's own when it has no parent). */
  root: updater("root"),
};
