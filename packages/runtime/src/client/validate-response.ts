// Checks a 2xx body against the contract schema the server documents it by.
import type { z } from "zod";
import { ApiResponseError } from "./errors.ts";
import type { HttpResponse } from "./http.ts";

/** Issues named in an error message; the rest are counted. */
const MAX_LISTED_ISSUES = 3;

/**
 * The body parsed by `schema`, or an ApiResponseError naming each field that does not match
 * (`GET /api/v3/runs/run_1: unexpected response: status: Invalid option: …`). Contract schemas
 * are plain `z.object`s, so fields this client does not know are stripped, not rejected: a newer
 * server that adds a field does not break an older client, and what the caller gets is exactly
 * the declared type (a field the types do not name would be invisible to TypeScript anyway).
 */
export function validateResponse<S extends z.ZodType>(schema: S, response: HttpResponse<unknown>, what: string): z.output<S> {
  const result = schema.safeParse(response.data);
  if (result.success) return result.data;
  const issues = result.error.issues;
  const listed = issues.slice(0, MAX_LISTED_ISSUES).map((issue) => `${issue.path.length > 0 ? fieldPath(issue.path) : "(body)"}: ${issue.message}`);
  if (issues.length > MAX_LISTED_ISSUES) listed.push(`and ${issues.length - MAX_LISTED_ISSUES} more`);
  throw new ApiResponseError(response.status, `${what}: unexpected response: ${listed.join("; ")}`, response.data, response.headers);
}

/** `["data", 0, "status"]` → `data[0].status`. */
function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((part, index) => (typeof part === "number" ? `[${part}]` : `${index > 0 ? "." : ""}${String(part)}`)).join("");
}
