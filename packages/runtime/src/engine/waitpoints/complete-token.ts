import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError, ValidationError } from "../../errors.ts";
import type { EngineDeps } from "../deps.ts";
import { completeWaitpoint, type CompleteResult } from "./complete-waitpoint.ts";

/** How token outputs are stored: JSON text, so retrieve can hand the SDK a serialized string. */
export const TOKEN_OUTPUT_TYPE = "application/json";

/** JSON text of an output; `undefined` (no output given) is stored as no output. */
export function encodeTokenOutput(output: unknown): string | null {
  if (output === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(output);
  } catch (error) {
    throw new ValidationError(`output: cannot be serialised as JSON (${(error as Error).message})`);
  }
  // JSON.stringify returns undefined for functions and symbols.
  return text === undefined ? null : text;
}

/**
 * Completes a token inside the caller's transaction: first writer wins. Waiting runs resume if
 * and only if `tx` commits, so a backend sharing the database can complete a token atomically
 * with its own writes. `tx` may also be a pool: the completion is then one statement, its own
 * transaction.
 *
 * Throws NotFoundError when no token has that id (in `environmentId`, when given). Completing a
 * token that is already COMPLETED or TIMED_OUT changes nothing and returns `{ changed: false }`.
 *
 * @example
 * await withTransaction(pool, async (tx) => {
 *   await tx.query("UPDATE orders SET approved = true WHERE id = $1", [orderId]);
 *   await completeToken(engine.deps, tx, tokenId, { approved: true });
 * });
 */
export async function completeToken(
  deps: Pick<EngineDeps, "clock">,
  tx: Queryable,
  tokenId: string,
  output: unknown,
  options: { environmentId?: string } = {},
): Promise<CompleteResult> {
  // Only tokens: run, batch and datetime waitpoints complete themselves.
  const result = await completeWaitpoint(deps, tx, tokenId, { ok: true, output: encodeTokenOutput(output), outputType: TOKEN_OUTPUT_TYPE }, { ...options, type: "MANUAL" });
  if (!result.changed && result.waitpoint?.type !== "MANUAL") throw new NotFoundError("Waitpoint not found");
  return result;
}
