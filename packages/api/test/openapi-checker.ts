import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { openApiPath } from "../src/openapi/document.ts";

export interface CheckedResponse {
  method: string;
  /** The route's path template as registered (`/api/v3/runs/:runId`, `/api/v2/packets/*`). */
  route: string;
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

type Json = Record<string, any>;

const pointer = (...parts: string[]) => parts.map((part) => part.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");

/**
 * Checks real responses against the served OpenAPI document: the operation must document the
 * status, its required headers must be present, and a JSON body must match the schema (JSON
 * Schema 2020-12, refs resolved within the document). Returns the problems, empty when it conforms.
 */
export class OpenApiChecker {
  readonly #ajv: Ajv2020;
  readonly #document: Json;

  constructor(document: Json) {
    this.#document = document;
    // Not strict: OpenAPI keywords (`example`, `in`…) sit next to schemas; the document is added
    // whole so `#/components/…` refs resolve.
    this.#ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
    addFormats.default(this.#ajv);
    this.#ajv.addSchema(document, "openapi.json");
  }

  /** The operation, or for a method the path does not have (405), any operation of the path. */
  #operation(method: string, route: string): { path: string; method: string; operation: Json } | undefined {
    const path = openApiPath(route);
    const item = this.#document.paths[path] as Json | undefined;
    if (!item) return undefined;
    const lower = method.toLowerCase();
    if (item[lower]) return { path, method: lower, operation: item[lower] };
    const [other] = Object.keys(item);
    return other ? { path, method: other, operation: item[other] } : undefined;
  }

  #resolve(value: Json): { value: Json; at: string | undefined } {
    if (typeof value.$ref !== "string") return { value, at: undefined };
    const at = value.$ref.slice(1);
    return { value: at.split("/").slice(1).reduce((node: Json, part: string) => node[part.replace(/~1/g, "/").replace(/~0/g, "~")], this.#document), at };
  }

  /** A request no route serves (an unknown path): 404, or what comes before routing, with the error body. */
  checkUnrouted(response: Omit<CheckedResponse, "route">): string[] {
    const where = `${response.method} (no route) → ${response.status}`;
    if (![400, 404, 413, 414, 415].includes(response.status)) return [`${where}: not one of 400/404/413/414/415`];
    const validate = this.#ajv.getSchema("openapi.json#/components/schemas/Error")!;
    let body: unknown;
    try {
      body = JSON.parse(response.body);
    } catch {
      return [`${where}: the body is not JSON: ${response.body.slice(0, 200)}`];
    }
    return validate(body) ? [] : [`${where}: body does not match the Error schema: ${response.body.slice(0, 200)}`];
  }

  check(response: CheckedResponse): string[] {
    const where = `${response.method} ${response.route} → ${response.status}`;
    const found = this.#operation(response.method, response.route);
    if (!found) return [`${where}: no such path in the OpenAPI document`];
    let documented = found.operation.responses[String(response.status)] as Json | undefined;
    if (found.method !== response.method.toLowerCase()) {
      // A method the path does not have: 405, or what comes before a method is matched (a malformed
      // URL 400, an overlong segment 414, a body refused by the parsers 413/415).
      if (![400, 405, 413, 414, 415].includes(response.status)) return [`${where}: the path has no ${response.method} operation, yet the answer is not one of 400/405/413/414/415`];
      // Every error response has the same content (the Error schema); BadRequest has no required headers.
      documented ??= { $ref: "#/components/responses/BadRequest" };
    }
    if (!documented) return [`${where}: status not documented (documented: ${Object.keys(found.operation.responses).join(", ")})`];
    const { value: definition, at } = this.#resolve(documented);
    const base = at ?? `/${pointer("paths", found.path, found.method, "responses", String(response.status))}`;
    const problems: string[] = [];
    for (const [name, header] of Object.entries((definition.headers ?? {}) as Json)) {
      if (header.required && response.headers[name.toLowerCase()] === undefined) problems.push(`${where}: header ${name} missing`);
    }
    const contentType = String(response.headers["content-type"] ?? "").split(";")[0]!.trim();
    const content = (definition.content ?? {}) as Json;
    if (Object.keys(content).length === 0) {
      if (response.body.length > 0) problems.push(`${where}: a body where none is documented`);
      return problems;
    }
    // Bytes of any media type (a packet download) carry no schema to check.
    if (!content[contentType]) {
      if (content["*/*"]) return problems;
      return [...problems, `${where}: Content-Type ${contentType || "none"} not documented (${Object.keys(content).join(", ")})`];
    }
    if (contentType !== "application/json") return problems;
    let body: unknown;
    try {
      body = JSON.parse(response.body);
    } catch {
      return [...problems, `${where}: the body is not JSON: ${response.body.slice(0, 200)}`];
    }
    const validate = this.#ajv.getSchema(`openapi.json#${base}/${pointer("content", contentType, "schema")}`);
    if (!validate) return [...problems, `${where}: schema not found at ${base}`];
    if (!validate(body)) {
      problems.push(`${where}: body does not match: ${this.#ajv.errorsText(validate.errors)}; body: ${response.body.slice(0, 300)}`);
    }
    return problems;
  }
}
