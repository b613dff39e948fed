import type { FastifyInstance, FastifyRequest } from "fastify";
import { assertStorableJson, jsonNestingExceeds, tooDeepError, ValidationError } from "@svc/runtime/engine";

/**
 * JSON bodies: an empty body parses as `undefined` (routes decide whether that is an error; the
 * waitpoint callback treats it as `{}`); malformed JSON is a 400, and so is JSON nested deeper than
 * MAX_JSON_DEPTH (checked on the text before JSON.parse builds the value every route would walk), and
 * so is a string anywhere in it (a property name too) that holds a NUL or half a surrogate pair:
 * the stored-text rule, the same answer on every field. NDJSON and text arrive as strings;
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
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return done(new ValidationError("Invalid JSON"), undefined);
    }
    // One rule for every string of every JSON body, payloads included: no NUL, no half surrogate pair.
    try {
      assertStorableJson(value, "Invalid request body");
    } catch (error) {
      return done(error as ValidationError, undefined);
    }
    done(null, value);
  });
  app.removeContentTypeParser("text/plain");
  app.addContentTypeParser(["text/plain", "application/x-ndjson"], { parseAs: "string" }, (_request, body, done) => done(null, String(body)));
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
}
