import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { FastifyInstance } from "fastify";
import { DASHBOARD_CSS } from "./assets/stylesheet.ts";
import { LOCAL_TIMES_SCRIPT } from "./assets/local-times-script.ts";
import { SESSION_RECORDS_SCRIPT } from "./assets/session-records-script.ts";
import type { DashboardRouteConfig } from "./session-hook.ts";

interface Asset {
  body: string | Buffer;
  type: string;
  etag: string;
}

function asset(body: string | Buffer, type: string): Asset {
  return { body, type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` };
}

/**
 * The dashboard's static files, served by the API itself (nothing else to deploy): its stylesheet,
 * the session page's record stream script, the script that shows times in the viewer's zone, and htmx, read once from the installed `htmx.org` package. Revalidated by ETag (`no-cache`), so
 * an upgrade is picked up at once without versioned URLs.
 */
export async function registerAssets(dash: FastifyInstance) {
  const htmxPath = createRequire(import.meta.url).resolve("htmx.org/dist/htmx.min.js");
  const assets: Record<string, Asset> = {
    "dashboard.css": asset(DASHBOARD_CSS, "text/css; charset=utf-8"),
    "htmx.min.js": asset(await readFile(htmxPath), "text/javascript; charset=utf-8"),
    [SESSION_RECORDS_SCRIPT.name]: asset(SESSION_RECORDS_SCRIPT.source, "text/javascript; charset=utf-8"),
    [LOCAL_TIMES_SCRIPT.name]: asset(LOCAL_TIMES_SCRIPT.source, "text/javascript; charset=utf-8"),
  };
  const config: DashboardRouteConfig = { dashboardPublic: true };
  dash.get<{ Params: { name: string } }>("/assets/:name", { config }, async (request, reply) => {
    const found = Object.hasOwn(assets, request.params.name) ? assets[request.params.name] : undefined;
    if (!found) return reply.status(404).type("text/plain; charset=utf-8").send("Not found");
    reply.header("cache-control", "no-cache").header("etag", found.etag).type(found.type);
    if (request.headers["if-none-match"] === found.etag) return reply.status(304).send();
    return reply.send(found.body);
  });
}
