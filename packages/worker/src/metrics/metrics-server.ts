import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";
import { bearerMatches } from "@svc/runtime/engine";

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The worker's own HTTP server (WORKER_METRICS_PORT): `GET /metrics` in the Prometheus text format,
 * behind `Authorization: Bearer <token>` when a token is set. Anything else is a 404 or 405 JSON error.
 */
export async function startMetricsServer(registry: Registry, options: { port: number; host?: string; token?: string; onError: (error: unknown) => void }): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const send = (status: number, body: string, contentType = "application/json; charset=utf-8", headers: Record<string, string> = {}) => {
      response.writeHead(status, { "content-type": contentType, ...headers });
      response.end(body);
    };
    const error = (status: number, message: string, headers: Record<string, string> = {}) => send(status, JSON.stringify({ error: message }), undefined, headers);
    const path = (request.url ?? "/").split("?")[0];
    if (path !== "/metrics") return error(404, `Not found: ${request.method} ${path?.slice(0, 80)} (this server serves GET /metrics only)`);
    if (request.method !== "GET" && request.method !== "HEAD") return error(405, `Method ${request.method} not allowed on /metrics: use GET`, { allow: "GET, HEAD" });
    if (options.token && !bearerMatches(request.headers.authorization, options.token)) {
      return error(401, "Missing or wrong metrics token: send Authorization: Bearer <METRICS_TOKEN>", { "www-authenticate": "Bearer" });
    }
    registry.metrics().then(
      (text) => send(200, request.method === "HEAD" ? "" : text, registry.contentType),
      (err: unknown) => {
        options.onError(err);
        error(503, `Metrics could not be collected: ${(err as Error)?.message ?? String(err)}`);
      },
    );
  });
  // Idle scrape connections must not hold up a shutdown.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "0.0.0.0", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : options.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
