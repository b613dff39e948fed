import { isDeepStrictEqual } from "node:util";

/** A run's metadata: a JSON object. */
export type RunMetadata = Record<string, unknown>;

/**
 * One change of a run's metadata, as Trigger.dev's SDK sends them (`PUT /api/v1/runs/{id}/metadata`,
 * `operations`) and task code makes them (`metadata.set(…)` is `{ type: "set", key, value }`).
 * A key that starts with `$.` is a path (`$.progress.percent`, `$.items.0`): it names a value
 * inside the object, whose parent must exist.
 */
export type MetadataOperation =
  | { type: "set"; key: string; value: unknown }
  | { type: "delete"; key: string }
  | { type: "append"; key: string; value: unknown }
  | { type: "remove"; key: string; value: unknown }
  | { type: "increment"; key: string; value: number }
  | { type: "update"; value: RunMetadata };

/** Keys no operation may name: they would reach Object.prototype. */
const UNSAFE_SEGMENTS = new Set(["__proto__", "constructor", "prototype"]);

/** The segments a key names: one for a plain key, those after `$` for a path. */
function segmentsOf(key: string): string[] {
  return key.startsWith("$.") ? key.slice(2).split(".") : [key];
}

/**
 * metadataKeyProblem's rule as a pattern for the API's document (ECMA-262, as JSON Schema reads
 * it): not one of the unsafe names, and for a `$.` path no segment unsafe or empty. Segments are
 * matched as `[^.]*`, which spans any character a key may hold, newlines included.
 */
export const METADATA_KEY_PATTERN =
  "^(?!(?:__proto__|constructor|prototype)$)(?!\\$\\.(?:[^.]*\\.)*(?:__proto__|constructor|prototype)(?:\\.|$))(?!\\$\\.(?:[^.]*\\.)*(?:\\.|$))";

/** Why `key` cannot be used, or null: `$.` with nothing after it names the root, and no segment may be `__proto__`, `constructor` or `prototype`. */
export function metadataKeyProblem(key: string): string | null {
  const segments = segmentsOf(key);
  if (key.startsWith("$.") && segments.some((s) => s.length === 0)) return "a path key must name a segment below $ in each part";
  if (segments.some((s) => UNSAFE_SEGMENTS.has(s))) return "a metadata key may not reference __proto__, constructor or prototype";
  return null;
}

/** The container holding `key`'s value, and the name of the value in it; null when a path's parent is missing. */
function locate(root: RunMetadata, key: string): { parent: Record<string, unknown> | unknown[]; name: string } | null {
  const segments = segmentsOf(key);
  let parent: unknown = root;
  for (const segment of segments.slice(0, -1)) {
    if (parent === null || typeof parent !== "object") return null;
    parent = (parent as Record<string, unknown>)[segment];
  }
  if (parent === null || typeof parent !== "object") return null;
  return { parent: parent as Record<string, unknown>, name: segments.at(-1)! };
}

function read(place: { parent: Record<string, unknown> | unknown[]; name: string }): unknown {
  return Object.hasOwn(place.parent, place.name) ? (place.parent as Record<string, unknown>)[place.name] : undefined;
}

function write(place: { parent: Record<string, unknown> | unknown[]; name: string }, value: unknown): void {
  (place.parent as Record<string, unknown>)[place.name] = value;
}

/**
 * Applies `operations` in order to a copy of `current` (pure): Trigger.dev's applyMetadataOperations.
 * - `set` replaces the value; `delete` removes it; `update` replaces the whole object;
 * - `append` adds to an array (a missing value becomes `[value]`, another value `[old, value]`);
 * - `remove` takes every element deep-equal to the value out of an array (no array: not applied);
 * - `increment` adds to a number (anything else counts as 0).
 * A path whose parent does not exist changes nothing. `unapplied` lists the operations that could
 * not be applied (an unsafe key, `remove` on a value that is not an array).
 */
export function applyMetadataOperations(current: RunMetadata, operations: readonly MetadataOperation[]): { metadata: RunMetadata; unapplied: MetadataOperation[] } {
  let metadata = structuredClone(current);
  const unapplied: MetadataOperation[] = [];
  for (const op of operations) {
    if (op.type === "update") {
      metadata = structuredClone(op.value);
      continue;
    }
    if (metadataKeyProblem(op.key) !== null) {
      unapplied.push(op);
      continue;
    }
    const place = locate(metadata, op.key);
    if (!place) continue;
    const existing = read(place);
    switch (op.type) {
      case "set":
        write(place, structuredClone(op.value));
        break;
      case "delete":
        if (Array.isArray(place.parent)) place.parent.splice(Number(place.name), 1);
        else delete place.parent[place.name];
        break;
      case "append":
        write(place, existing === undefined ? [op.value] : Array.isArray(existing) ? [...existing, op.value] : [existing, op.value]);
        break;
      case "remove":
        if (Array.isArray(existing)) write(place, existing.filter((item) => !isDeepStrictEqual(item, op.value)));
        else unapplied.push(op);
        break;
      case "increment":
        write(place, (typeof existing === "number" ? existing : 0) + op.value);
        break;
    }
  }
  return { metadata, unapplied };
}

/**
 * Fewer operations with the same effect (Trigger.dev's collapseOperations): consecutive increments
 * of a key are summed, consecutive sets of a key keep the last, consecutive deletes keep one.
 */
export function collapseMetadataOperations(operations: readonly MetadataOperation[]): MetadataOperation[] {
  const out: MetadataOperation[] = [];
  for (const op of operations) {
    const last = out.at(-1);
    if (last && op.type !== "update" && last.type === op.type && last.key === op.key) {
      if (op.type === "increment") {
        out[out.length - 1] = { ...op, value: (last as { value: number }).value + op.value };
        continue;
      }
      if (op.type === "set" || op.type === "delete") {
        out[out.length - 1] = op;
        continue;
      }
    }
    out.push(op);
  }
  return out;
}

/** Trigger.dev's cap on a run's metadata, as JSON: 256 KiB. */
export const MAX_METADATA_BYTES = 256 * 1024;

/** The metadata's size as stored (JSON, UTF-8). */
export function metadataBytes(metadata: RunMetadata): number {
  return Buffer.byteLength(JSON.stringify(metadata), "utf8");
}
