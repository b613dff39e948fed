import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";
import { sendError } from "./errors.ts";

/**
 * Response headers a browser's script may read: the SDK reads the public token minted for a
 * trigger, a realtime subscription (`@electric-sql/client`) its offsets and handles, and a stream
 * subscription (runs' streams, session channels) which format the events have (without
 * X-Stream-Version it parses each event's data as one chunk).
 */
const EXPOSED_HEADERS = [
  "x-trigger-jwt", "x-trigger-jwt-claims", "x-should-retry", "retry-after",
  "electric-offset", "electric-handle", "electric-schema", "electric-cursor", "electric-up-to-date", "electric-chunk-last-offset", "electric-shape-id",
  "x-stream-version", "x-session-settled",
];

/** A token's callback URL is for servers calling back, not for pages: no CORS there, as in Trigger.dev. */
const NO_CORS = /^\/api\/v1\/waitpoints\/tokens\/[^/]+\/callback\//;

/**
 * CORS for the API, so that a browser holding a public access token can trigger runs, read them and
 * complete tokens (Trigger.dev's routes answer preflights too). Credentials travel in the
 * Authorization header, never in cookies, so any origin may call: a request without a valid key or
 * token is refused all the same.
 */
export async function registerCors(app: FastifyInstance): Promise<void> {
  // Before the plugin's own hook, which answers such a request in plain text: our errors are JSON.
  app.addHook("onRequest", async (request, reply) => {
    if (request.method !== "OPTIONS" || NO_CORS.test(request.url)) return;
    if (request.headers.origin && request.headers["access-control-request-method"]) return;
    return sendError(reply, 400, "Invalid preflight request: OPTIONS needs the Origin and Access-Control-Request-Method headers");
  });
  await app.register(cors, {
    delegator: (request, callback) => {
      if (NO_CORS.test(request.url)) return callback(null, { origin: false });
      callback(null, {
        origin: "*",
        methods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
        exposedHeaders: EXPOSED_HEADERS,
        maxAge: 86_400,
      });
    },
  });
}
