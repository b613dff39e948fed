import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { sendError } from "./errors.ts";

/** Methods routes are registered for. OPTIONS is left out: the CORS plugin answers it on every path. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] as const;
type Method = (typeof METHODS)[number];

/** The methods the app's router has a route for at this concrete path (HEAD comes with GET). */
export function allowedMethods(app: FastifyInstance, path: string): string[] {
  return METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
}

/** A 405 with `Allow` and the `{ error }` body. */
export function sendMethodNotAllowed(reply: FastifyReply, method: string, path: string, allowed: readonly string[]) {
  reply.header("allow", allowed.join(", "));
  return sendError(reply, 405, `Method ${method} is not allowed on ${path} (allowed: ${allowed.join(", ")})`);
}

/**
 * The not-found handler: a path some route serves under another method is a 405 with `Allow`
 * (computed from the registered routes, so it cannot drift from them); any other path a 404.
 */
export function notFoundOrNotAllowed(app: FastifyInstance) {
  return (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split("?")[0]!;
    const allowed = allowedMethods(app, path);
    if (allowed.length > 0 && !allowed.includes(request.method)) return sendMethodNotAllowed(reply, request.method, path, allowed);
    return sendError(reply, 404, `No route for ${request.method} ${path}`);
  };
}

/**
 * A static path (`…/envvars/:env/import`) that a parametric route of another method would swallow
 * (`PUT …/envvars/:env/:name` reads `import` as a variable's name): every method but `allowed`
 * answers 405 with `Allow` here, as for any other path served under another method. `HEAD` goes
 * with `GET`.
 */
export function refuseOtherMethods(app: FastifyInstance, url: string, allowed: readonly Method[]): void {
  const allow = allowed.includes("GET") && !allowed.includes("HEAD") ? [...allowed, "HEAD" as const] : allowed;
  const refused = METHODS.filter((method) => !allow.includes(method) && method !== "HEAD");
  app.route({
    method: refused,
    url,
    // HEAD is answered with GET's route when GET is refused here too.
    exposeHeadRoute: !allow.includes("GET"),
    handler: (request, reply) => sendMethodNotAllowed(reply, request.method, request.url.split("?")[0]!, allow),
  });
}
