import fc from "fast-check";

type Schema = Record<string, any>;

/** Strings that break naive handling: NUL, lone surrogates (bad UTF-16), RTL marks, escapes, SQL/paths. */
export const HOSTILE_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\uD800",
  "\uDFFF",
  "x\uDC00\uD800y",
  "\uFFFF\uFFFE",
  "💩".repeat(3),
  "\u202Eevil",
  "%00",
  "%",
  "../../etc/passwd",
  "' OR 1=1 --",
  "null",
  "__proto__",
  "constructor",
  "1e309",
  "-0",
  "2038-01-19T03:14:08Z",
  "0000-00-00T00:00:00Z",
  "+275760-09-13T00:00:00.000Z",
  "P1000000Y",
  "999999999999999999999d",
  "\\",
  "\"",
];

export const hostileString = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 200_000 }).map((n) => "x".repeat(n)) },
);

const BOUNDARY_NUMBERS = [0, -0, -1, 1, 0.5, -1.5, 2 ** 31 - 1, 2 ** 31, 2 ** 53 - 1, 2 ** 53 + 2, -(2 ** 53), 1e308, -1e308, 1e-308];

/** Values of the wrong type, and huge or nested ones. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.constantFrom(...BOUNDARY_NUMBERS),
  fc.constantFrom(true, false, null),
  fc.constant([]),
  fc.constant({}),
  fc.jsonValue({ maxDepth: 4 }),
  // Nested around the 128-level depth guard of JSON from outside (deeper text: see requests.ts).
  fc.integer({ min: 1, max: 200 }).map((depth) => nest(depth)),
  fc.integer({ min: 100, max: 5_000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
);

export function nest(depth: number): unknown {
  let value: unknown = "leaf";
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

export interface SchemaArbitraryOptions {
  /** Resolves `#/components/...` refs. */
  document: Schema;
  /** Share of leaves replaced by a hostile value (0–1). */
  chaos: number;
  /** Known good values by property name (ids, task names), used for a share of matching leaves. */
  known: Record<string, string[]>;
  /**
   * Only values the schema admits (positive data): no boundary values past a limit, no hostile
   * property names; with `chaos` 0. Names in `onlyKnown` (opaque cursors) take known values only.
   */
  strict?: boolean;
  onlyKnown?: readonly string[];
}

function resolve(schema: Schema, document: Schema): Schema {
  if (typeof schema.$ref !== "string") return schema;
  return schema.$ref
    .slice(2)
    .split("/")
    .reduce((node: Schema, part: string) => node[part.replace(/~1/g, "/").replace(/~0/g, "~")], document);
}

/**
 * Values for a JSON Schema 2020-12 schema of the document: mostly valid, with boundary values
 * (lengths and numbers at and just past their limits), and with a `chaos` share of leaves swapped
 * for values of the wrong type, hostile strings, or huge and nested values.
 */
export function arbitraryFor(input: Schema, options: SchemaArbitraryOptions, name = "", depth = 0): fc.Arbitrary<unknown> {
  const valid = validFor(resolve(input, options.document), options, name, depth);
  if (options.chaos <= 0) return valid;
  const weight = Math.max(1, Math.round(options.chaos * 100));
  return fc.oneof({ weight: 100 - weight, arbitrary: valid }, { weight, arbitrary: hostileValue });
}

function validFor(schema: Schema, options: SchemaArbitraryOptions, name: string, depth: number): fc.Arbitrary<unknown> {
  const known = options.known[name];
  if (options.onlyKnown?.includes(name)) return fc.constantFrom(...(known?.length ? known : [undefined]));
  const own = validForSchema(schema, options, name, depth);
  // Known values are shared by name across operations (an `id` of a schedule or of a token):
  // positive data keeps those this schema admits.
  if (options.strict && known?.length) {
    const fitting = known.filter((k) => admitsString(schema, k, options.document));
    return fitting.length ? fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...fitting) }, { weight: 1, arbitrary: own }) : own;
  }
  return known?.length ? fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: own }) : own;
}

/** Whether a known string value fits `schema` (its type, pattern and enum, or one of its alternatives'). */
function admitsString(input: Schema, value: string, document: Schema): boolean {
  const schema = resolve(input, document);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const alternatives = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  return (
    (schema.type === undefined || types.includes("string")) &&
    (typeof schema.pattern !== "string" || new RegExp(schema.pattern, "u").test(value)) &&
    (!Array.isArray(schema.enum) || schema.enum.includes(value)) &&
    (!Array.isArray(alternatives) || alternatives.some((alternative) => admitsString(alternative, value, document)))
  );
}

/**
 * `base` and `extra` both (JSON Schema's allOf), for generating from: properties merged one by
 * one, required lists joined, other keywords from `extra` (an alternative of an anyOf beside
 * `properties`, such as a payload's type tied to `options.payloadType`).
 */
function mergeSchemas(base: Schema, extra: Schema, document: Schema): Schema {
  const merged: Schema = { ...base, ...extra };
  if (base.properties || extra.properties) {
    const properties: Record<string, Schema> = { ...(base.properties ?? {}) };
    for (const [key, schema] of Object.entries((extra.properties ?? {}) as Record<string, Schema>)) {
      properties[key] = properties[key] ? mergeSchemas(resolveNullable(properties[key]!, document), schema, document) : schema;
    }
    merged.properties = properties;
  }
  if (base.required || extra.required) merged.required = [...new Set([...(base.required ?? []), ...(extra.required ?? [])])];
  return merged;
}

/** A $ref resolved, and an optional object (`anyOf: [object, …]`) narrowed to its object alternative. */
function resolveNullable(schema: Schema, document: Schema): Schema {
  const resolved = resolve(schema, document);
  const alternatives = (resolved.anyOf ?? resolved.oneOf) as Schema[] | undefined;
  const object = alternatives?.map((s) => resolve(s, document)).find((s) => s.type === "object" || s.properties);
  return object ?? resolved;
}

function validForSchema(schema: Schema, options: SchemaArbitraryOptions, name: string, depth: number): fc.Arbitrary<unknown> {
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) {
    // Alternatives beside constraints of the schema's own (a type, properties) narrow them.
    const { anyOf: _anyOf, oneOf: _oneOf, ...own } = schema;
    const narrowing = own.type !== undefined || own.properties !== undefined;
    return fc.oneof(...alternatives.map((s: Schema) => arbitraryFor(narrowing ? mergeSchemas(own, resolve(s, options.document), options.document) : s, options, name, depth + 1)));
  }
  if (schema.not && typeof schema.not.type === "string" && options.strict) {
    const { not, ...rest } = schema;
    return validForSchema(rest, options, name, depth).filter((value) => jsonType(value) !== not.type);
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length) return arbitraryFor(schema.allOf[0], options, name, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (type.length > 1) return fc.oneof(...type.map((t: string) => validForSchema({ ...schema, type: t }, options, name, depth)));
  switch (type[0]) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "string":
      return options.strict ? strictStringFor(schema) : stringFor(schema);
    case "integer":
    case "number":
      return options.strict ? strictNumberFor(schema, type[0] === "integer") : numberFor(schema, type[0] === "integer");
    case "array": {
      const items = schema.items ? arbitraryFor(schema.items, options, name, depth + 1) : fc.jsonValue({ maxDepth: 2 });
      const minLength = options.strict ? (schema.minItems ?? 0) : 0;
      return fc.array(items, { minLength, maxLength: Math.max(minLength, Math.min(schema.maxItems ?? 4, 4)) });
    }
    case "object":
      return objectFor(schema, options, depth);
    default:
      return fc.jsonValue({ maxDepth: 3 });
  }
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value === "number" ? (Number.isInteger(value) ? "integer" : "number") : typeof value;
}

function stringFor(schema: Schema): fc.Arbitrary<string> {
  if (schema.format === "date-time") {
    return fc.date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true }).map((d) => d.toISOString());
  }
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 64, 4096);
  const plain = fc.string({ minLength: min, maxLength: Math.max(min, Math.min(max, 32)) });
  const boundaries = [min, max, max + 1, Math.max(0, min - 1)].map((n) => "a".repeat(n));
  const arbitraries: fc.Arbitrary<string>[] = [plain, fc.constantFrom(...boundaries)];
  // A pattern fast-check cannot generate from: the plain strings still exercise it.
  const matched = typeof schema.pattern === "string" ? matching(schema.pattern) : null;
  if (matched) arbitraries.push(matched);
  return fc.oneof(...arbitraries);
}

function numberFor(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  // An exclusive bound (zod's positive(): exclusiveMinimum 0) is the next integer for integers; for
  // other numbers it is kept as the boundary value, just past the valid range.
  const step = integer ? 1 : 0;
  const min = schema.minimum ?? (typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + step : -(2 ** 31));
  const max = Math.min(schema.maximum ?? (typeof schema.exclusiveMaximum === "number" ? schema.exclusiveMaximum - step : 2 ** 31), Number.MAX_SAFE_INTEGER);
  const inRange = integer ? fc.integer({ min: Math.max(min, Number.MIN_SAFE_INTEGER), max }) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
  return fc.oneof({ weight: 3, arbitrary: inRange }, { weight: 1, arbitrary: fc.constantFrom(min, max, min - 1, max + 1, 1.5, ...BOUNDARY_NUMBERS) });
}

function objectFor(schema: Schema, options: SchemaArbitraryOptions, depth: number): fc.Arbitrary<unknown> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = (schema.required ?? []) as string[];
  const model = Object.fromEntries(Object.entries(properties).map(([key, s]) => [key, arbitraryFor(s, options, key, depth + 1)]));
  const record = fc.record(model, { requiredKeys: required.filter((key) => key in model) });
  if (Object.keys(properties).length === 0 && options.strict) {
    // A map, with names its propertyNames admit and as many as min/maxProperties say.
    const values = schema.additionalProperties && typeof schema.additionalProperties === "object" ? arbitraryFor(schema.additionalProperties, options, "", depth + 1) : fc.jsonValue({ maxDepth: 2 });
    const keys = schema.propertyNames ? (strictStringFor(schema.propertyNames) as fc.Arbitrary<string>) : fc.string({ maxLength: 12 });
    const min = schema.minProperties ?? 0;
    return fc.dictionary(keys, values, { minKeys: min, maxKeys: Math.max(min, Math.min(schema.maxProperties ?? 4, 4)) });
  }
  if (Object.keys(properties).length === 0) {
    // A map (env var uploads): keys from the known names and hostile strings.
    const values = schema.additionalProperties && typeof schema.additionalProperties === "object" ? arbitraryFor(schema.additionalProperties, options, "", depth + 1) : fc.jsonValue({ maxDepth: 2 });
    return fc.dictionary(fc.oneof(fc.string({ maxLength: 12 }), hostileString.filter((s) => s.length < 300)), values, { maxKeys: 4 });
  }
  // Missing required fields and extra fields are request-level mutations (see requests.ts).
  const dependent = Object.entries((schema.dependentRequired ?? {}) as Record<string, string[]>);
  return dependent.length === 0 ? record : record.map((value) => withDependents(value as Record<string, unknown>, dependent));
}

/**
 * `value` without the fields whose dependents (JSON Schema's dependentRequired) it lacks, again
 * until none is left: `{ limit }` of `limit` and `period`, which go together, is `{}`.
 */
function withDependents(value: Record<string, unknown>, dependent: [string, string[]][]): Record<string, unknown> {
  const out = { ...value };
  for (let dropped = true; dropped; ) {
    dropped = false;
    for (const [key, needs] of dependent) {
      if (key in out && needs.some((need) => !(need in out))) {
        delete out[key];
        dropped = true;
      }
    }
  }
  return out;
}

/** Strings the schema admits: its pattern (and length), its length, its format; never a NUL. */
function strictStringFor(schema: Schema): fc.Arbitrary<string> {
  if (schema.format === "date-time") return stringFor(schema);
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 64, 256);
  const patterns = [schema.pattern, ...((schema.allOf ?? []) as Schema[]).map((s) => s.pattern)].filter((p): p is string => typeof p === "string");
  const excluded = new Set<string>(schema.not?.enum ?? []);
  const fits = (value: string) => value.length >= min && value.length <= max && !excluded.has(value) && patterns.every((p) => new RegExp(p, "u").test(value));
  // The first pattern fast-check can generate from; a pattern of lookaheads only (what a key may
  // not be) it cannot: plain and hostile strings, those the patterns admit kept.
  const generable = patterns.map(matching).find((a) => a !== null);
  const base = generable ?? fc.oneof(fc.string({ minLength: min, maxLength: Math.max(min, Math.min(max, 32)) }), fc.constantFrom(...HOSTILE_STRINGS.filter((h) => h.length >= min && !h.includes("\u0000") && h.isWellFormed())));
  return base.filter(fits);
}

/** Strings matching `pattern`, or null when fast-check cannot generate from it (lookaheads). */
function matching(pattern: string): fc.Arbitrary<string> | null {
  try {
    return fc.stringMatching(new RegExp(pattern));
  } catch {
    return null;
  }
}

/** Numbers within the schema's bounds only. */
function strictNumberFor(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const step = integer ? 1 : Number.EPSILON;
  const min = schema.minimum ?? (typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + step : -(2 ** 31));
  const max = Math.min(schema.maximum ?? (typeof schema.exclusiveMaximum === "number" ? schema.exclusiveMaximum - step : 2 ** 31), Number.MAX_SAFE_INTEGER);
  return integer ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) }) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}
