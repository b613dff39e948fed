import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { sendError } from "./errors.ts";

/** Methods routes are registered for. OPTIONS is left out: the CORS plugin answers it on every path. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] as const;

/** The methods the app's router has a route for at this concrete path (HEAD comes with GET). */
export function allowedMethods(app: FastifyInstance, path: string): string[] {
  return METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
}

/**
 * The not-found handler: a path some route serves under another method is a 405 with `Allow`
 * (computed from the registered routes, so it cannot drift from them); any other path a 404.
 */
export function notFoundOrNotAllowed(app: FastifyInstance) {
  return (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split("?")[0]!;
    const allowed = allowedMethods(app, path);
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      reply.header("allow", allowed.join(", "));
      return sendError(reply, 405, `Method ${request.method} is not allowed on ${path} (allowed: ${allowed.join(", ")})`);
    }
    return sendError(reply, 404, `No route for ${request.method} ${path}`);
  };
}
