import fc from "fast-check";
import { arbitraryFor, hostileValue } from "./schema-arbitrary.ts";

type Json = Record<string, any>;
type Method = "GET" | "POST" | "PUT" | "DELETE" | "PATCH";
const METHODS: Method[] = ["GET", "POST", "PUT", "DELETE", "PATCH"];

export interface FuzzOperation {
  method: Method;
  /** The route's template as registered (`/api/v3/runs/:runId`), for the checker. */
  route: string;
  /** The document's path (`/api/v3/runs/{runId}`). */
  path: string;
  parameters: { name: string; in: "path" | "query" | "header"; schema: Json }[];
  body?: { mediaType: string; schema: Json | undefined };
  /** Other methods of the same path (a wrong method must pick none of them). */
  siblings: Method[];
}

export interface FuzzRequest {
  operation: FuzzOperation;
  method: Method;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  /** What was done to the request, for the failure message. */
  mutation: string;
}

export interface FuzzContext {
  document: Json;
  /** Good values by parameter or property name (ids of real resources, task names…). */
  known: Record<string, string[]>;
  /** Authorization header values: none, malformed, wrong prefix, secret keys, PATs, public JWTs. */
  credentials: { name: string; header: string | undefined; weight: number }[];
}

/** The operations of the served document, with the route templates they were built from. */
/** The document's operations served by `defineRoute` routes (`routeOf` finds none for /healthz and the like, which are not fuzzed). */
export function operationsOf(document: Json, routeOf: (method: string, path: string) => string | undefined): FuzzOperation[] {
  const operations: FuzzOperation[] = [];
  for (const [path, item] of Object.entries(document.paths as Json)) {
    const methods = Object.keys(item).map((m) => m.toUpperCase() as Method);
    for (const method of methods) {
      const op = item[method.toLowerCase()];
      const route = routeOf(method, path);
      if (!route) continue;
      const content = op.requestBody?.content as Json | undefined;
      const [mediaType] = Object.keys(content ?? {});
      operations.push({
        method,
        route,
        path,
        parameters: op.parameters ?? [],
        ...(mediaType ? { body: { mediaType, schema: content![mediaType].schema } } : {}),
        siblings: methods,
      });
    }
  }
  return operations;
}

/** One path segment, percent-encoded (a lone surrogate travels as U+FFFD's bytes), or raw bad percent-encoding. */
function segment(value: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  const encoded = value.map((v) => encodeBytes(typeof v === "string" ? v : JSON.stringify(v) ?? "")).filter((s) => s.length > 0);
  const badPercent = fc.constantFrom("%", "%zz", "%FF", "%C0%80", "%ED%A0%80", "%00", "%2F", "%2e%2e");
  return fc.oneof({ weight: 9, arbitrary: encoded }, { weight: 1, arbitrary: badPercent });
}

function encodeBytes(value: string): string {
  return [...Buffer.from(value, "utf8")].map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`)).join("");
}

function queryValue(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => (typeof v === "object" && v !== null ? [JSON.stringify(v)] : [String(v)]));
  return [typeof value === "object" && value !== null ? JSON.stringify(value) : String(value)];
}

function queryString(context: FuzzContext, operation: FuzzOperation): fc.Arbitrary<string> {
  const params = operation.parameters.filter((p) => p.in === "query");
  const entries = params.map((p) => fc.option(arbitraryFor(p.schema, { document: context.document, chaos: 0.2, known: context.known }, p.name), { freq: 2 }).map((v) => [p.name, v] as const));
  const extra = fc.option(fc.tuple(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom("limit", "page[size]", "filter", "__proto__")), hostileValue), { freq: 4 });
  return fc.tuple(fc.tuple(...entries), extra).map(([pairs, more]) => {
    const all = [...pairs.filter(([, v]) => v !== null), ...(more ? [more] : [])] as [string, unknown][];
    const parts = all.flatMap(([name, v]) => queryValue(v).map((s) => `${encodeBytes(name)}=${encodeBytes(s)}`));
    return parts.length ? `?${parts.join("&")}` : "";
  });
}

function pathOf(context: FuzzContext, operation: FuzzOperation): fc.Arbitrary<string> {
  const names = [...operation.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  if (names.length === 0) return fc.constant(operation.path);
  const segments = names.map((name) => {
    const schema = operation.parameters.find((p) => p.in === "path" && p.name === name)?.schema ?? {};
    return segment(arbitraryFor(schema, { document: context.document, chaos: 0.15, known: context.known }, name));
  });
  return fc.tuple(...segments).map((values) => names.reduce((path, name, i) => path.replace(`{${name}}`, values[i]!), operation.path));
}

const WRONG_CONTENT_TYPES = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "application/json; charset=latin1", "APPLICATION/JSON", "application/octet-stream"];
const BAD_JSON_TEXTS = ["", " ", "{", "}", "[]", "null", "0", "\"text\"", "{\"a\":1}{\"b\":2}", "{\"a\":\"\\u0000\"}", "{\"a\":\"\\ud800\"}", "\uFEFF{}", "{'a':1}", "{\"__proto__\":{\"polluted\":true}}", "{\"constructor\":{\"prototype\":{\"polluted\":true}}}"];

type Body = { payload?: string | Buffer; contentType?: string; mutation: string };

function jsonBody(context: FuzzContext, schema: Json): fc.Arbitrary<Body> {
  const options = (chaos: number) => ({ document: context.document, chaos, known: context.known });
  const json = (mutation: string, value: fc.Arbitrary<unknown>) => value.map((v) => ({ payload: JSON.stringify(v) ?? "null", contentType: "application/json", mutation }));
  const valid = arbitraryFor(schema, options(0));
  const required = (schema.required ?? []) as string[];
  return fc.oneof(
    { weight: 40, arbitrary: json("valid", valid) },
    { weight: 40, arbitrary: json("hostile leaves", arbitraryFor(schema, options(0.2))) },
    {
      weight: required.length ? 10 : 0,
      arbitrary: fc.tuple(valid, fc.nat()).map(([v, i]) => {
        const copy = { ...(v as Json) };
        delete copy[required[i % Math.max(1, required.length)]!];
        return { payload: JSON.stringify(copy), contentType: "application/json", mutation: "missing required field" };
      }),
    },
    { weight: 10, arbitrary: fc.tuple(valid, fc.string({ maxLength: 12 }), hostileValue).map(([v, key, extra]) => ({ payload: JSON.stringify(typeof v === "object" && v !== null ? { ...v, [key]: extra } : v), contentType: "application/json", mutation: "extra field" })) },
    { weight: 10, arbitrary: json("wrong type", hostileValue) },
    { weight: 10, arbitrary: fc.constantFrom(...BAD_JSON_TEXTS).map((text) => ({ payload: text, contentType: "application/json", mutation: "malformed JSON" })) },
    { weight: 10, arbitrary: fc.constant({ payload: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), contentType: "application/json", mutation: "invalid UTF-8" }) },
    { weight: 10, arbitrary: fc.tuple(valid, fc.constantFrom(...WRONG_CONTENT_TYPES)).map(([v, contentType]) => ({ payload: JSON.stringify(v) ?? "", contentType, mutation: "wrong content type" })) },
    { weight: 10, arbitrary: fc.constant({ mutation: "no body" }) },
    // Just over the 3 MiB body limit: 413 (rare, each is 3 MiB).
    { weight: 1, arbitrary: fc.constant({ payload: `{"payload":"${"x".repeat(3 * 1024 * 1024)}"}`, contentType: "application/json", mutation: "body over the limit" }) },
    // Deeply nested JSON (past the 128-level depth guard): a 400, never a stack overflow.
    { weight: 10, arbitrary: fc.integer({ min: 10_000, max: 100_000 }).map((depth) => ({ payload: `{"payload":${"[".repeat(depth)}${"]".repeat(depth)}}`, contentType: "application/json", mutation: `nested ${depth} deep` })) },
  );
}

function ndjsonBody(context: FuzzContext, schema: Json): fc.Arbitrary<Body> {
  const line = arbitraryFor(schema, { document: context.document, chaos: 0.15, known: context.known });
  return fc.oneof(
    { weight: 4, arbitrary: fc.array(line, { minLength: 1, maxLength: 5 }).map((lines) => ({ payload: lines.map((l) => JSON.stringify(l) ?? "null").join("\n"), contentType: "application/x-ndjson", mutation: "ndjson lines" })) },
    { weight: 1, arbitrary: fc.constantFrom(...BAD_JSON_TEXTS, "{}\n{", "\n\n\n").map((text) => ({ payload: text, contentType: "application/x-ndjson", mutation: "malformed ndjson" })) },
    { weight: 1, arbitrary: fc.constantFrom(...WRONG_CONTENT_TYPES).map((contentType) => ({ payload: "{}", contentType, mutation: "wrong content type" })) },
  );
}

function bytesBody(): fc.Arbitrary<Body> {
  return fc
    .tuple(fc.uint8Array({ maxLength: 2048 }), fc.constantFrom("application/octet-stream", "application/json", "text/plain", "image/png", "x/\u00e9"))
    .map(([bytes, contentType]) => ({ payload: Buffer.from(bytes), contentType, mutation: "bytes" }));
}

function bodyFor(context: FuzzContext, operation: FuzzOperation): fc.Arbitrary<Body> {
  const body = operation.body;
  if (!body) {
    // A body where none is expected.
    return fc.oneof({ weight: 5, arbitrary: fc.constant({ mutation: "no body" }) }, { weight: 1, arbitrary: hostileValue.map((v) => ({ payload: JSON.stringify(v) ?? "", contentType: "application/json", mutation: "unexpected body" })) });
  }
  if (body.mediaType === "application/x-ndjson") return ndjsonBody(context, body.schema ?? {});
  if (body.mediaType === "*/*") return bytesBody();
  return jsonBody(context, body.schema ?? {});
}

/** Requests for one operation: its path, query and body (see above), a credential, sometimes a method the path does not have. */
export function requestFor(context: FuzzContext, operation: FuzzOperation): fc.Arbitrary<FuzzRequest> {
  const wrongMethods = METHODS.filter((m) => !operation.siblings.includes(m));
  const method = fc.oneof({ weight: 19, arbitrary: fc.constant(operation.method) }, { weight: wrongMethods.length ? 1 : 0, arbitrary: fc.constantFrom(...(wrongMethods.length ? wrongMethods : [operation.method])) });
  return fc
    .record({ path: pathOf(context, operation), query: queryString(context, operation), body: bodyFor(context, operation), credential: fc.oneof(...context.credentials.map((c) => ({ weight: c.weight, arbitrary: fc.constant(c) }))), method })
    .map(({ path, query, body, credential, method }) => ({
      operation,
      method,
      url: path + query,
      headers: {
        ...(credential.header !== undefined ? { authorization: credential.header } : {}),
        ...(body.contentType !== undefined ? { "content-type": body.contentType } : {}),
      },
      ...(body.payload !== undefined && method !== "GET" ? { payload: body.payload } : {}),
      mutation: `${method === operation.method ? "" : `wrong method ${method}; `}${body.mutation}; credential: ${credential.name}`,
    }));
}


/**
 * Positive data: requests the document admits in every part (path, query, body as its schemas
 * say, opaque cursors only as this API returned them), with the operation's own method and media
 * type and `authorization`. Whatever the server then answers, it must not be its schema refusing.
 */
export function positiveRequestFor(
  context: FuzzContext,
  operation: FuzzOperation,
  authorization: string,
  onlyKnown: readonly string[],
  /** Query parameters that exclude each other (their descriptions say so): the first present is sent. */
  exclusive: readonly (readonly string[])[] = [],
): fc.Arbitrary<FuzzRequest> {
  const options = { document: context.document, chaos: 0, known: context.known, strict: true, onlyKnown };
  const names = [...operation.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const path = names.length
    ? fc
        .tuple(...names.map((name) => arbitraryFor(operation.parameters.find((p) => p.in === "path" && p.name === name)?.schema ?? {}, options, name).map((v) => encodeBytes(String(v)))))
        .filter((values) => values.every((v) => v.length > 0 && v !== "." && v !== ".."))
        .map((values) => names.reduce((p, name, i) => p.replace(`{${name}}`, values[i]!), operation.path))
    : fc.constant(operation.path);
  const params = operation.parameters.filter((p) => p.in === "query");
  const query = fc
    .tuple(...params.map((p) => fc.option(arbitraryFor(p.schema, options, p.name), { freq: 2 }).map((v) => [p.name, v] as const)))
    .map((pairs) => {
      const present = pairs.filter(([, v]) => v !== null && v !== undefined);
      const excluded = new Set(exclusive.flatMap((group) => group.filter((name) => present.some(([n]) => n === name)).slice(1)));
      const parts = present.filter(([name]) => !excluded.has(name)).flatMap(([name, v]) => queryValue(v).map((s) => `${encodeBytes(name)}=${encodeBytes(s)}`));
      return parts.length ? `?${parts.join("&")}` : "";
    });
  const body: fc.Arbitrary<Body> = !operation.body
    ? fc.constant({ mutation: "no body" })
    : operation.body.mediaType === "*/*" && operation.body.schema?.type === "string"
      ? arbitraryFor(operation.body.schema, options).map((text) => ({ payload: String(text), contentType: "text/plain", mutation: "text" }))
      : operation.body.mediaType === "*/*"
      ? fc.uint8Array({ maxLength: 256 }).map((bytes) => ({ payload: Buffer.from(bytes), contentType: "application/octet-stream", mutation: "bytes" }))
      : operation.body.mediaType === "application/x-ndjson"
        ? fc.array(arbitraryFor(operation.body.schema ?? {}, options), { minLength: 1, maxLength: 3 }).map((lines) => ({ payload: lines.map((l) => JSON.stringify(l)).join("\n"), contentType: "application/x-ndjson", mutation: "ndjson" }))
        : arbitraryFor(operation.body.schema ?? {}, options).map((v) => ({ payload: JSON.stringify(v) ?? "{}", contentType: "application/json", mutation: "valid" }));
  return fc.record({ path, query, body }).map(({ path, query, body }) => ({
    operation,
    method: operation.method,
    url: path + query,
    headers: { authorization, ...(body.contentType ? { "content-type": body.contentType } : {}) },
    ...(body.payload !== undefined ? { payload: body.payload } : {}),
    mutation: `positive: ${body.mutation}`,
  }));
}
