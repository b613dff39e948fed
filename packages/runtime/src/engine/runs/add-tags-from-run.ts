import type { Queryable } from "../../db/queryable.ts";
import { MAX_TAGS } from "./plan-run.ts";

export type AddTagsResult =
  | { kind: "added"; tags: string[] }
  /** The run would have more than MAX_TAGS tags: nothing was changed. */
  | { kind: "too_many"; tags: string[]; wanted: number }
  /** The execution no longer holds the run. */
  | { kind: "fenced" };

/**
 * `tags.add` from a run's own code: adds tags to the run (those it has already are skipped, so a
 * replayed call changes nothing), fenced by the execution's claim token. A run's tag rows of the
 * run list (run_tags, migration 0032) are written in the same statement, with the run's
 * created_at, so the list's tag lanes and retention (which deletes a run's run_tags by its tags)
 * see the added tags as they see the trigger's. `tags` are normalized by the caller.
 */
export async function addTagsFromRun(db: Queryable, input: { runId: string; environmentId: string; claimToken: string; tags: string[] }): Promise<AddTagsResult> {
  const { rows } = await db.query<{ held: boolean; before: string[] | null; merged: string[] | null }>(
    `WITH held AS (
       SELECT id, environment_id, created_at, tags FROM runs
       WHERE id = $1 AND environment_id = $2 AND claim_token = $3 AND status = 'EXECUTING' FOR UPDATE),
     merged AS (
       SELECT h.id, h.environment_id, h.created_at, h.tags AS before,
              h.tags || ARRAY(SELECT t FROM unnest($4::text[]) WITH ORDINALITY AS n(t, i) WHERE t <> ALL(h.tags) ORDER BY i) AS tags
       FROM held h),
     updated AS (
       UPDATE runs r SET tags = m.tags FROM merged m
       WHERE r.id = m.id AND cardinality(m.tags) <= ${MAX_TAGS} AND cardinality(m.tags) > cardinality(m.before)
       RETURNING r.id),
     tagged AS (
       INSERT INTO run_tags (environment_id, tag, created_at, run_id)
       SELECT m.environment_id, t, m.created_at, m.id FROM merged m CROSS JOIN LATERAL unnest(m.tags) AS t
       WHERE EXISTS (SELECT 1 FROM updated) AND t <> ALL(m.before)
       ON CONFLICT DO NOTHING)
     SELECT EXISTS (SELECT 1 FROM held) AS held, (SELECT before FROM merged) AS before, (SELECT tags FROM merged) AS merged`,
    [input.runId, input.environmentId, input.claimToken, input.tags],
  );
  const row = rows[0]!;
  if (!row.held || !row.merged) return { kind: "fenced" };
  if (row.merged.length > MAX_TAGS) return { kind: "too_many", tags: row.before ?? [], wanted: row.merged.length };
  return { kind: "added", tags: row.merged };
}
