/**
 * Which registered route a request reaches, emulating the router closely enough for the fuzzer's
 * checks: the one it was generated for may not be it. A wrong method may match another route
 * (PUT …/envvars/dev/import updates a variable named "import"); a segment longer than
 * maxParamLength (2048, decoded) matches no parameter and falls through to a wildcard
 * (…/packets/download/<huge> is GET …/packets/*); dot segments are resolved first.
 */
const MAX_PARAM_LENGTH = 2048;

/** `/a/b/../c/.` → `/a/c`: app.inject parses the URL by WHATWG rules, which resolve dot segments (%2e too). */
export function withoutDotSegments(path: string): string {
  const out: string[] = [];
  for (const segment of path.split("/").slice(1)) {
    const plain = segment.replace(/%2e/gi, ".");
    if (plain === ".") continue;
    if (plain === "..") out.pop();
    else out.push(segment);
  }
  return `/${out.join("/")}`.replace(/(.)\/$/, "$1");
}

function decodedLength(segment: string): number {
  try {
    return decodeURIComponent(segment).length;
  } catch {
    return segment.length;
  }
}

function matches(template: string, path: string, maxParamLength: number): boolean {
  const want = template.split("/");
  const got = path.split("/");
  for (let i = 0; i < want.length; i++) {
    const part = want[i]!;
    if (part === "*") return got.slice(i).join("/").length > 0;
    const segment = got[i];
    if (segment === undefined) return false;
    if (part.startsWith(":")) {
      if (segment.length === 0 || decodedLength(segment) > maxParamLength) return false;
    } else if (part !== segment) {
      return false;
    }
  }
  return want.length === got.length;
}

/**
 * The route template `method url` reaches among `routes`, or undefined (a 404/405/414 before any
 * route). The 405 check (another method serves the path) knows no parameter length: pass Infinity.
 */
export function routeReached(routes: readonly { method: string; url: string }[], method: string, url: string, maxParamLength = MAX_PARAM_LENGTH): string | undefined {
  const path = withoutDotSegments(url.split("?")[0]!);
  // Parametric routes before wildcards, as the router orders them.
  const ordered = [...routes].sort((a, b) => Number(a.url.endsWith("*")) - Number(b.url.endsWith("*")));
  return ordered.find((route) => route.method === method && matches(route.url, path, maxParamLength))?.url;
}
