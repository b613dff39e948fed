// Reads the API client of the installed @trigger.dev/sdk: every public method of @trigger.dev/core's
// `ApiClient` and the HTTP paths it calls, taken from the published JavaScript (not from a list kept
// by hand), so that a new SDK version's new method or path shows up by itself.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import ts from "typescript";

/** One request a method makes: its HTTP method and path, parameters as `{name}` (query strings left out). */
export interface SdkCall {
  method: string;
  path: string;
}

export interface SdkMethod {
  name: string;
  /** Sorted by path, then method; empty for a method that makes no request of its own. */
  calls: SdkCall[];
}

export interface InstalledApiClient {
  /** The version of @trigger.dev/core the installed @trigger.dev/sdk uses. */
  version: string;
  methods: SdkMethod[];
}

/** Where the SDK's requests go: anything else a method builds (a header, a query string) is not a path. */
const PATH_PREFIXES = ["/api/", "/realtime/", "/engine/"];

/** The @trigger.dev/core directory the installed @trigger.dev/sdk resolves (not whichever copy the caller would). */
export function coreDirectoryOfSdk(from: string = import.meta.url): string {
  const sdkEntry = createRequire(from).resolve("@trigger.dev/sdk");
  return dirname(createRequire(sdkEntry).resolve("@trigger.dev/core/package.json"));
}

export function readInstalledApiClient(coreDir: string = coreDirectoryOfSdk()): InstalledApiClient {
  const version = (JSON.parse(readFileSync(join(coreDir, "package.json"), "utf8")) as { version: string }).version;
  const clientDir = join(coreDir, "dist/esm/v3/apiClient");
  const helpers = helperPaths(parse(join(clientDir, "runStream.js")));
  return { version, methods: apiClientMethods(parse(join(clientDir, "index.js")), helpers) };
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
}

type Body = ts.Node;

/**
 * Paths built by the classes and functions of a helper module (runStream.js builds the realtime
 * stream URL of `fetchStream`), by name: a client method that names one makes its requests.
 */
function helperPaths(source: ts.SourceFile): Map<string, SdkCall[]> {
  const found = new Map<string, SdkCall[]>();
  for (const statement of source.statements) {
    if ((ts.isClassDeclaration(statement) || ts.isFunctionDeclaration(statement)) && statement.name) {
      const calls = callsIn([statement]);
      if (calls.length > 0) found.set(statement.name.text, calls);
    }
  }
  return found;
}

function apiClientMethods(source: ts.SourceFile, helpers: Map<string, SdkCall[]>): SdkMethod[] {
  const client = source.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === "ApiClient");
  if (!client) throw new Error("@trigger.dev/core's apiClient/index.js no longer declares class ApiClient: the coverage extractor needs updating");
  const privates = new Map<string, Body>();
  for (const member of client.members) {
    if ((ts.isMethodDeclaration(member) || ts.isGetAccessorDeclaration(member)) && ts.isPrivateIdentifier(member.name) && member.body) {
      privates.set(member.name.text, member.body);
    }
  }
  const methods: SdkMethod[] = [];
  for (const member of client.members) {
    if (!(ts.isMethodDeclaration(member) || ts.isGetAccessorDeclaration(member)) || !ts.isIdentifier(member.name) || !member.body) continue;
    // A public method's requests include those of the private methods it calls (streamBatchItems
    // sends through #streamBatchItemsWithRetry) and of the helpers it names; not those of other
    // public methods, which are listed on their own.
    const bodies: Body[] = [member.body];
    const seen = new Set<string>();
    const visit = (node: ts.Node) => {
      if (ts.isPropertyAccessExpression(node) && ts.isPrivateIdentifier(node.name) && privates.has(node.name.text) && !seen.has(node.name.text)) {
        seen.add(node.name.text);
        bodies.push(privates.get(node.name.text)!);
        ts.forEachChild(privates.get(node.name.text)!, visit);
      }
      ts.forEachChild(node, visit);
    };
    visit(member.body);
    const calls = callsIn(bodies);
    for (const body of bodies) {
      forEachIdentifier(body, (name) => {
        for (const call of helpers.get(name) ?? []) calls.push(call);
      });
    }
    methods.push({ name: member.name.text, calls: uniqueSorted(calls) });
  }
  return methods.sort((a, b) => a.name.localeCompare(b.name));
}

function forEachIdentifier(node: ts.Node, visit: (name: string) => void): void {
  if (ts.isIdentifier(node)) visit(node.text);
  ts.forEachChild(node, (child) => forEachIdentifier(child, visit));
}

function uniqueSorted(calls: SdkCall[]): SdkCall[] {
  const byKey = new Map(calls.map((c) => [`${c.path} ${c.method}`, c]));
  return [...byKey.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, c]) => c);
}

/**
 * The requests made in `bodies`: every template literal that renders to an API path, except one
 * that only serves as the base of another (`const base = \`${this.baseUrl}/realtime/v1/sessions/${id}\``).
 */
function callsIn(bodies: Body[]): SdkCall[] {
  const locals = new Map<string, ts.Expression>();
  const templates: ts.TemplateExpression[] = [];
  const collect = (node: ts.Node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) locals.set(node.name.text, node.initializer);
    if (ts.isTemplateExpression(node)) templates.push(node);
    ts.forEachChild(node, collect);
  };
  for (const body of bodies) collect(body);
  const usedAsBase = new Set<ts.Node>();
  for (const template of templates) {
    for (const span of template.templateSpans) {
      if (ts.isIdentifier(span.expression) && locals.has(span.expression.text)) usedAsBase.add(locals.get(span.expression.text)!);
    }
  }
  const calls: SdkCall[] = [];
  for (const template of templates) {
    if (usedAsBase.has(template)) continue;
    const path = render(template, locals, 0);
    if (path === null || !PATH_PREFIXES.some((prefix) => path.startsWith(prefix))) continue;
    calls.push({ method: httpMethodOf(template), path });
  }
  return calls;
}

/** The template as a path: the base URL dropped, other values as `{name}`, the query string dropped; null when it is not a URL. */
function render(template: ts.TemplateExpression, locals: Map<string, ts.Expression>, depth: number): string | null {
  let text = template.head.text;
  for (const span of template.templateSpans) {
    const value = span.expression;
    const source = value.getText();
    if (/(^|\W)this\.baseUrl$/.test(source)) {
      // The base URL, possibly with an override (`options?.baseUrl ?? this.baseUrl`).
    } else if (ts.isIdentifier(value) && locals.has(value.text) && depth < 4) {
      // A local holding a base path, an optional query string, or an encoded parameter.
      const local = locals.get(value.text)!;
      if (ts.isTemplateExpression(local)) text += render(local, locals, depth + 1) ?? `{${parameterName(value)}}`;
      else if (ts.isConditionalExpression(local)) text += "?";
      else text += `{${parameterName(local)}}`;
    } else if (ts.isConditionalExpression(value)) {
      // `${query ? `?${query}` : ""}`: an optional query string.
      text += "?";
    } else {
      text += `{${parameterName(value)}}`;
    }
    text += span.literal.text;
  }
  const path = text.split("?")[0]!;
  return path.startsWith("/") ? path : null;
}

/**
 * The name a value is known by: `encodeURIComponent(options.channel)` → channel,
 * `encodeURIComponent(value.replace(…))` → value, `encodedTaskId` → taskId.
 */
function parameterName(expression: ts.Expression): string {
  let node: ts.Node = expression;
  for (;;) {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) node = node.expression.expression;
    else if (ts.isCallExpression(node) && node.arguments.length > 0) node = node.arguments[0]!;
    else break;
  }
  const text = ts.isPropertyAccessExpression(node) ? node.name.text : node.getText();
  const name = text.replace(/^encoded([A-Z])/, (_, c: string) => c.toLowerCase());
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : "value";
}

/**
 * The `method:` of the request options passed beside the URL, in the call that takes it (directly,
 * or through the variable it is assigned to); GET when none is given.
 */
function httpMethodOf(template: ts.TemplateExpression): string {
  let node: ts.Node = template;
  while (node.parent && !ts.isCallExpression(node.parent) && !ts.isNewExpression(node.parent) && !ts.isVariableDeclaration(node.parent)) node = node.parent;
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) {
    const name = parent.name.text;
    let scope: ts.Node = parent;
    while (scope.parent && !ts.isBlock(scope)) scope = scope.parent;
    let found: string | null = null;
    const visit = (n: ts.Node) => {
      if (found === null && (ts.isCallExpression(n) || ts.isNewExpression(n)) && (n.arguments ?? []).some((a) => ts.isIdentifier(a) && a.text === name)) {
        found = methodOption(n);
      }
      ts.forEachChild(n, visit);
    };
    visit(scope);
    return found ?? "GET";
  }
  return parent && (ts.isCallExpression(parent) || ts.isNewExpression(parent)) ? (methodOption(parent) ?? "GET") : "GET";
}

function methodOption(call: ts.CallExpression | ts.NewExpression): string | null {
  for (const argument of call.arguments ?? []) {
    if (!ts.isObjectLiteralExpression(argument)) continue;
    for (const property of argument.properties) {
      if (ts.isPropertyAssignment(property) && property.name.getText() === "method" && ts.isStringLiteral(property.initializer)) {
        return property.initializer.text.toUpperCase();
      }
    }
  }
  return null;
}
