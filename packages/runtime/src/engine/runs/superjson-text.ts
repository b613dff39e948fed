import superjson from "superjson";

/**
 * superjson text for values, byte for byte what `superjson.stringify` writes, without its walk
 * for the common case: plain JSON data (what most tasks return) is `{"json":<JSON>}` with no
 * `meta`. Anything superjson annotates (Dates, Maps, undefined, -0, NaN, one object referenced
 * twice, class instances, …) goes through superjson itself.
 */
export function stringifySuperjson(value: unknown): string {
  return isPlainJson(value, new Set()) ? `{"json":${JSON.stringify(value)}}` : superjson.stringify(value);
}

/** The value of superjson text; text without `meta` needs no annotations applied. */
export function parseSuperjson(text: string): unknown {
  const parsed: unknown = JSON.parse(text);
  if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) && !("meta" in parsed)) return (parsed as { json?: unknown }).json;
  return superjson.deserialize(parsed as Parameters<typeof superjson.deserialize>[0]);
}

function isPlainJson(value: unknown, seen: Set<object>): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value) && !Object.is(value, -0);
    case "object": {
      if (value === null) return true;
      // superjson records a second reference to one object (referential equality) in `meta`.
      if (seen.has(value)) return false;
      seen.add(value);
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || !isPlainJson(value[i], seen)) return false;
        }
        return true;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      if (Object.getOwnPropertySymbols(value).length > 0) return false;
      for (const key in value) {
        if (!isPlainJson((value as Record<string, unknown>)[key], seen)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}
