import type { FastifyInstance, FastifyRequest } from "fastify";
import { jsonNestingExceeds, tooDeepError, ValidationError } from "@svc/runtime/engine";

/**
 * JSON bodies: an empty body parses as `undefined` (routes decide whether that is an error; the
 * waitpoint callback treats it as `{}`); malformed JSON is a 400, and so is JSON nested deeper than
 * MAX_JSON_DEPTH (checked on the text before JSON.parse builds the value every route would walk). NDJSON and text arrive as strings;
 * anything else as a Buffer (packet uploads).
 */
/** Media types whose bodies are parsed as JSON (everything else reaches routes as a string or Buffer). */
export const JSON_MEDIA_TYPES: readonly string[] = ["application/json", "application/super+json"];

/** The media type of a request's body, lower-cased without parameters; "none" when absent. */
export function mediaTypeOf(request: FastifyRequest): string {
  return String(request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase() || "none";
}

export function registerBodyParsers(app: FastifyInstance) {
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser([...JSON_MEDIA_TYPES], { parseAs: "string" }, (_request, body, done) => {
    const text = String(body);
    if (text.trim().length === 0) return done(null, undefined);
    if (jsonNestingExceeds(text)) return done(tooDeepError("Request body"), undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new ValidationError("Invalid JSON"), undefined);
    }
  });
  app.removeContentTypeParser("text/plain");
  app.addContentTypeParser(["text/plain", "application/x-ndjson"], { parseAs: "string" }, (_request, body, done) => done(null, String(body)));
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
}
