import { z, type ZodType } from "zod";

export type JsonSchema = Record<string, unknown>;

/**
 * A zod schema as JSON Schema 2020-12, the dialect of OpenAPI 3.1 (so `null` is a type, never
 * `nullable`). `io: "input"` describes what is sent: for requests what the route accepts, for
 * responses what the client parses. Types JSON cannot carry (a Date, a transform's output) become
 * `{}`. Definitions zod hoists into `$defs` move to `components.schemas` through `defs`, because a
 * `#/$defs/…` pointer would resolve against the OpenAPI document's root.
 */
export function toJsonSchema(schema: ZodType, defs: Record<string, JsonSchema>): JsonSchema {
  const { $schema: _dialect, $defs, ...rest } = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    unrepresentable: "any",
    io: "input",
    // A Date the schema accepts arrives over JSON as an ISO 8601 string; a coerced one also as a
    // number (epoch milliseconds: `format` constrains strings only).
    override: (ctx) => {
      const def = ctx.zodSchema._zod.def as { type: string; coerce?: boolean };
      if (def.type === "date") Object.assign(ctx.jsonSchema, { type: def.coerce ? ["string", "number"] : "string", format: "date-time" });
    },
  }) as JsonSchema;
  for (const [name, definition] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) {
    const rewritten = rewriteRefs(definition) as JsonSchema;
    // Two different definitions under one name would make one of them lie.
    if (defs[name] && JSON.stringify(defs[name]) !== JSON.stringify(rewritten)) throw new Error(`OpenAPI: two different schemas are both named ${name}`);
    defs[name] = rewritten;
  }
  return rewriteRefs(rest) as JsonSchema;
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) =>
      key === "$ref" && typeof inner === "string" && inner.startsWith("#/$defs/") ? [key, `#/components/schemas/${inner.slice("#/$defs/".length)}`] : [key, rewriteRefs(inner)],
    ),
  );
}
