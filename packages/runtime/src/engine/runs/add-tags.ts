import { withTransaction } from "../../db/queryable.ts";
import { NotFoundError, UnprocessableError, ValidationError } from "../../errors.ts";
import type { EngineDeps } from "../deps.ts";
import { MAX_TAG_LENGTH, MAX_TAGS } from "./plan-run.ts";

export type TagDecision =
  | { kind: "none" }
  | { kind: "add"; added: string[]; tags: string[] }
  | { kind: "too_many"; total: number; refused: string[] };

/**
 * What adding `requested` to a run's `existing` tags does (pure). Tags are trimmed, blank ones and
 * those the run has are skipped; a run holds at most MAX_TAGS (Trigger.dev's limit and message).
 */
export function decideTags(existing: readonly string[], requested: readonly string[]): TagDecision {
  const wanted = [...new Set(requested.map((t) => t.trim()).filter((t) => t.length > 0))];
  const long = wanted.find((t) => t.length > MAX_TAG_LENGTH);
  if (long) throw new ValidationError(`tags: each tag must be at most ${MAX_TAG_LENGTH} characters ("${long.slice(0, 20)}…")`);
  const added = wanted.filter((t) => !existing.includes(t));
  if (added.length === 0) return { kind: "none" };
  const total = existing.length + added.length;
  if (total > MAX_TAGS) return { kind: "too_many", total, refused: added };
  return { kind: "add", added, tags: [...existing, ...added] };
}

/**
 * Adds tags to a run of the environment, whatever its status (tags.add): the run's `tags` and the
 * tag index the run list reads (run_tags, migration 0032), in one transaction. Returns the tags it
 * added (none when the run had them all).
 */
export async function addRunTags(deps: Pick<EngineDeps, "db" | "clock">, environmentId: string, runId: string, requested: readonly string[]): Promise<string[]> {
  return withTransaction(deps.db, async (tx) => {
    const { rows } = await tx.query<{ tags: string[]; created_at: Date }>(
      `SELECT tags, created_at FROM runs WHERE id = $1 AND environment_id = $2 FOR UPDATE`,
      [runId, environmentId],
    );
    const run = rows[0];
    if (!run) throw new NotFoundError("Run not found");
    const decision = decideTags(run.tags, requested);
    if (decision.kind === "none") return [];
    if (decision.kind === "too_many") {
      throw new UnprocessableError(
        `Runs can only have ${MAX_TAGS} tags, you're trying to set ${decision.total}. These tags have not been set: ${decision.refused.map((t) => `'${t}'`).join(", ")}.`,
      );
    }
    // Guarded on the tags read above (the row is locked, so it holds; a failed guard is a bug).
    const updated = await tx.query(
      `UPDATE runs SET tags = $3, updated_at = $4 WHERE id = $1 AND environment_id = $2 AND tags = $5`,
      [runId, environmentId, decision.tags, deps.clock.now(), run.tags],
    );
    if (updated.rowCount !== 1) throw new Error(`tags of run ${runId} changed under its row lock`);
    await tx.query(
      `INSERT INTO run_tags (environment_id, tag, created_at, run_id) SELECT $1, tag, $2, $3 FROM unnest($4::text[]) AS t(tag) ON CONFLICT DO NOTHING`,
      [environmentId, run.created_at, runId, decision.added],
    );
    return decision.added;
  });
}
