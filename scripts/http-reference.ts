// Writes docs/http-reference.md from the OpenAPI document the API serves at /api/openapi.json.
// `pnpm docs:http` regenerates it; test/http-reference.test.ts fails while the committed file is stale.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createApp } from "../packages/api/src/app.ts";
import { routesOf } from "../packages/api/src/http/route.ts";
import { openApiPath } from "../packages/api/src/openapi/document.ts";
import { SecretBox, systemClock, type EngineDeps } from "../packages/runtime/src/engine/index.ts";

export const HTTP_REFERENCE_PATH = fileURLToPath(new URL("../docs/http-reference.md", import.meta.url));

/** The base URL the document names as its server: where `pnpm start` serves the API. */
const SERVER_URL = "http://localhost:3030";

type Schema = Record<string, any>;
interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean; description?: string; schema?: Schema }[];
  requestBody?: { required?: boolean; description?: string; content: Record<string, { schema?: Schema }> };
  responses: Record<string, Schema>;
}
interface Document {
  info: { title: string; version: string; description?: string };
  tags: { name: string; description?: string }[];
  components: { responses: Record<string, { description: string; headers?: Record<string, Schema> }>; schemas: Record<string, Schema> };
  paths: Record<string, Record<string, Operation>>;
}

/**
 * The API's document and the credential kinds each route accepts, from an app built by createApp
 * as main.ts builds it. Serving the document touches no database: the pool is never queried.
 */
export async function loadApiDescription(): Promise<{ document: Document; credentials: Map<string, string[]> }> {
  const unused = (): never => {
    throw new Error("the HTTP reference generator does not query the database");
  };
  const engine = {
    db: { query: unused, connect: unused, end: async () => {} },
    clock: systemClock,
    dispatcher: { dispatch: unused },
    secrets: new SecretBox("http-reference-generator-key"),
    apiUrl: SERVER_URL,
  } as unknown as EngineDeps;
  const app = await createApp({ engine }, { logger: false });
  try {
    const response = await app.inject({ method: "GET", url: "/api/openapi.json" });
    if (response.statusCode !== 200) throw new Error(`GET /api/openapi.json answered ${response.statusCode}: ${response.body}`);
    const credentials = new Map<string, string[]>();
    for (const route of routesOf(app)) if (route.auth) credentials.set(`${route.method} ${openApiPath(route.url)}`, route.auth.allow);
    return { document: response.json() as Document, credentials };
  } finally {
    await app.close();
  }
}

const CREDENTIAL_NAMES: Record<string, string> = {
  secretKey: "secret key",
  personalAccessToken: "personal access token",
  publicJwt: "public access token (JWT, within its scopes)",
};
const ZOD_SAFE_INTEGER = 9007199254740991;

/** Text for one markdown table cell. */
function cell(text: string): string {
  return text.replace(/\r?\n/g, " ").replace(/\|/g, "\\|");
}

function code(text: string): string {
  return text.includes("`") ? `\`\` ${text} \`\`` : `\`${text}\``;
}

function resolve(document: Document, schema: Schema | undefined): Schema {
  if (!schema) return {};
  const ref = schema.$ref as string | undefined;
  if (!ref) return schema;
  const name = ref.replace("#/components/schemas/", "");
  return document.components.schemas[name] ?? {};
}

/** A compact type for a schema: `string (1–128 chars)`, `"A" | "B"`, `integer (≥ 0)`, `array of object`. */
function typeOf(document: Document, raw: Schema | undefined): string {
  const schema = resolve(document, raw);
  if ("const" in schema) return code(JSON.stringify(schema.const));
  if (Array.isArray(schema.enum)) return schema.enum.map((value: unknown) => code(JSON.stringify(value))).join(" | ");
  for (const key of ["anyOf", "oneOf"] as const) {
    if (Array.isArray(schema[key])) return [...new Set((schema[key] as Schema[]).map((s) => typeOf(document, s)))].join(" | ");
  }
  const type = Array.isArray(schema.type) ? schema.type.join(" | ") : (schema.type as string | undefined);
  if (!type) return "any";
  if (type === "array") {
    const items = typeOf(document, schema.items);
    return items === "any" ? "array" : `array of ${items}`;
  }
  const limits: string[] = [];
  if (type === "string") {
    if (schema.format) limits.push(schema.format);
    if (schema.minLength !== undefined || schema.maxLength !== undefined) {
      if (schema.minLength !== undefined && schema.maxLength !== undefined) limits.push(`${schema.minLength}–${schema.maxLength} chars`);
      else if (schema.maxLength !== undefined) limits.push(`≤ ${schema.maxLength} chars`);
      else if (schema.minLength === 1) limits.push("non-empty");
      else limits.push(`≥ ${schema.minLength} chars`);
    }
    if (schema.pattern) limits.push(`pattern ${code(schema.pattern)}`);
  }
  if (type === "integer" || type === "number") {
    const max = schema.maximum !== undefined && schema.maximum !== ZOD_SAFE_INTEGER ? schema.maximum : undefined;
    if (schema.minimum !== undefined && max !== undefined) limits.push(`${schema.minimum}–${max}`);
    else if (schema.minimum !== undefined) limits.push(`≥ ${schema.minimum}`);
    else if (max !== undefined) limits.push(`≤ ${max}`);
  }
  if (type === "object" && schema.additionalProperties && typeof schema.additionalProperties === "object" && !schema.properties) {
    const values = typeOf(document, schema.additionalProperties);
    if (values !== "any") return `map of ${values}`;
  }
  return limits.length ? `${type} (${limits.join(", ")})` : type;
}

interface Field {
  name: string;
  type: string;
  required: boolean;
  description: string;
}

/**
 * The properties of an object schema, nested ones flattened with dotted names (`options.queue.name`,
 * `data[].id`). An object schema met again in the same table (a run's `relatedRuns.parent` is
 * shaped like its `relatedRuns.root`) is named, not repeated.
 */
function fieldsOf(document: Document, raw: Schema | undefined, prefix = "", depth = 0, seen = new Map<string, string>()): Field[] {
  const schema = resolve(document, raw);
  const properties = schema.properties as Record<string, Schema> | undefined;
  if (!properties) return [];
  const required = new Set<string>(schema.required ?? []);
  const fields: Field[] = [];
  for (const [name, property] of Object.entries(properties)) {
    const resolved = resolve(document, property);
    const path = `${prefix}${name}`;
    const field: Field = { name: path, type: typeOf(document, resolved), required: required.has(name), description: resolved.description ?? "" };
    fields.push(field);
    if (depth >= 3) continue;
    const items = resolve(document, resolved.items);
    const nested = resolved.properties ? { schema: resolved, prefix: `${path}.` } : resolved.type === "array" && items.properties ? { schema: items, prefix: `${path}[].` } : null;
    if (!nested) continue;
    const key = JSON.stringify(nested.schema);
    const earlier = seen.get(key);
    if (earlier) {
      field.description = [field.description, `fields as ${code(earlier)}`].filter(Boolean).join("; ");
      continue;
    }
    seen.set(key, nested.prefix.replace(/\.$/, ""));
    fields.push(...fieldsOf(document, nested.schema, nested.prefix, depth + 1, seen));
  }
  return fields;
}

function fieldTable(fields: Field[]): string[] {
  const withDescriptions = fields.some((f) => f.description);
  const lines = withDescriptions ? ["| field | type | required | description |", "|---|---|---|---|"] : ["| field | type | required |", "|---|---|---|"];
  for (const f of fields) {
    const row = [code(f.name), cell(f.type), f.required ? "yes" : ""];
    if (withDescriptions) row.push(cell(f.description));
    lines.push(`| ${row.join(" | ")} |`);
  }
  return lines;
}

/** A schema as a field table when it is an object with properties, else one line naming its type. */
function schemaLines(document: Document, schema: Schema | undefined): string[] {
  const resolved = resolve(document, schema);
  const fields = fieldsOf(document, resolved);
  if (fields.length) return fieldTable(fields);
  const items = resolve(document, resolved.items);
  if (resolved.type === "array" && items.properties) return [`An array of:`, "", ...fieldTable(fieldsOf(document, items))];
  return [`Type: ${typeOf(document, resolved)}.`];
}

function anchorOf(tag: string): string {
  return tag.toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-");
}

function authLine(operation: Operation, kinds: string[] | undefined): string {
  if (Array.isArray(operation.security) && operation.security.length === 0) return "none (the URL is the credential, or the data is public)";
  if (!kinds) return "`Authorization: Bearer <credential>`";
  return `\`Authorization: Bearer <credential>\`, one of: ${kinds.map((k) => CREDENTIAL_NAMES[k] ?? k).join(", ")}`;
}

function operationLines(document: Document, method: string, path: string, operation: Operation, kinds: string[] | undefined): string[] {
  const lines = [`### ${method.toUpperCase()} ${path}`, ""];
  if (operation.summary) lines.push(`${operation.summary}.`.replace(/\.\.$/, "."), "");
  if (operation.description) lines.push(operation.description, "");
  lines.push(`- Operation: \`${operation.operationId}\``, `- Auth: ${authLine(operation, kinds)}`, "");

  const parameters = operation.parameters ?? [];
  if (parameters.length) {
    lines.push("**Parameters**", "", "| name | in | type | required | description |", "|---|---|---|---|---|");
    for (const p of parameters) lines.push(`| ${code(p.name)} | ${p.in} | ${cell(typeOf(document, p.schema))} | ${p.required ? "yes" : ""} | ${cell(p.description ?? "")} |`);
    lines.push("");
  }

  if (operation.requestBody) {
    const body = operation.requestBody;
    for (const [mediaType, content] of Object.entries(body.content)) {
      lines.push(`**Request body** (${code(mediaType)}${body.required ? ", required" : ", optional"})`, "");
      if (body.description) lines.push(body.description, "");
      lines.push(...schemaLines(document, content.schema), "");
    }
  }

  lines.push("**Responses**", "");
  const errors: string[] = [];
  for (const [status, response] of Object.entries(operation.responses)) {
    if (response.$ref) {
      const name = String(response.$ref).replace("#/components/responses/", "");
      errors.push(`${status} ${name}`);
      continue;
    }
    const [mediaType, content] = Object.entries((response.content ?? {}) as Record<string, { schema?: Schema }>)[0] ?? [];
    lines.push(`- **${status}** ${response.description ?? ""}${mediaType ? ` (${code(mediaType)})` : ""}`.trimEnd());
    for (const [header, spec] of Object.entries((response.headers ?? {}) as Record<string, Schema>)) {
      lines.push(`  - header ${code(header)}: ${spec.description ?? typeOf(document, spec.schema)}`);
    }
    if (content?.schema && Object.keys(content.schema).length) lines.push("", ...schemaLines(document, content.schema).map((l) => (l ? `  ${l}` : l)));
    lines.push("");
  }
  if (errors.length) lines.push(`Errors (body \`{ "error": "…" }\`, see [Error responses](#error-responses)): ${errors.join(", ")}.`, "");
  return lines;
}

/** The markdown of docs/http-reference.md for a document and the credential kinds of its routes. */
export function renderHttpReference(document: Document, credentials: Map<string, string[]>): string {
  const byTag = new Map<string, { method: string; path: string; operation: Operation }[]>();
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const tag = operation.tags?.[0] ?? "other";
      (byTag.get(tag) ?? byTag.set(tag, []).get(tag)!).push({ method, path, operation });
    }
  }
  const tags = document.tags.filter((t) => byTag.has(t.name));
  const lines = [
    "# HTTP reference",
    "",
    "<!-- Generated by `pnpm docs:http` (scripts/http-reference.ts) from the OpenAPI document the API serves",
    "     at /api/openapi.json. Do not edit by hand: test/http-reference.test.ts fails while this file is stale. -->",
    "",
    `Every route of ${document.info.title} ${document.info.version}: ${document.info.description ?? ""}`.trimEnd(),
    "The live document is at `GET /api/openapi.json` (OpenAPI 3.1, JSON Schema 2020-12). Guides with",
    "examples: [runs, batches and packets](http-runs-batches-packets.md), [waitpoint tokens](waitpoint-tokens.md),",
    "[schedules](schedules.md), [sessions](sessions.md), [env vars](env-vars-and-branches.md); who may call what:",
    "[credentials](credentials-and-cli.md).",
    "",
    "Send credentials as `Authorization: Bearer <credential>` and JSON bodies with `Content-Type: application/json`.",
    "",
    ...tags.map((t) => `- [${t.name}](#${anchorOf(t.name)}): ${t.description ?? ""}`.trimEnd()),
    "- [Error responses](#error-responses)",
    "",
  ];
  for (const tag of tags) {
    lines.push(`## ${tag.name}`, "");
    if (tag.description) lines.push(`${tag.description}.`.replace(/\.\.$/, "."), "");
    const operations = byTag.get(tag.name)!;
    for (const { method, path, operation } of operations) {
      lines.push(...operationLines(document, method, path, operation, credentials.get(`${method.toUpperCase()} ${path}`)));
    }
  }
  lines.push("## Error responses", "", "Every error has the body `{ \"error\": \"…\" }` unless noted.", "", "| status | name | meaning | headers |", "|---|---|---|---|");
  const byName = new Map(Object.entries(document.components.responses));
  const statuses = new Map<string, string>();
  for (const methods of Object.values(document.paths)) {
    for (const operation of Object.values(methods)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (response.$ref) statuses.set(String(response.$ref).replace("#/components/responses/", ""), status);
      }
    }
  }
  for (const [name, response] of [...byName].sort(([a], [b]) => Number(statuses.get(a)) - Number(statuses.get(b)))) {
    const headers = Object.keys(response.headers ?? {}).map(code).join(", ");
    lines.push(`| ${statuses.get(name) ?? ""} | ${name} | ${cell(response.description)} | ${headers} |`);
  }
  lines.push("");
  return lines.join("\n");
}

export async function buildHttpReference(): Promise<string> {
  const { document, credentials } = await loadApiDescription();
  return renderHttpReference(document, credentials);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(HTTP_REFERENCE_PATH, await buildHttpReference());
  console.log(`wrote ${HTTP_REFERENCE_PATH}`);
}
