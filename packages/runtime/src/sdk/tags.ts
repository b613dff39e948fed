import { normalizeTags } from "../engine/runs/plan-run.ts";
import { logger } from "./logger.ts";
import { requireExecution } from "./run-context.ts";

/**
 * The current run's tags. `tags.add` adds tags to the run executing it (at most 10 in all, each
 * at most 128 characters), for filtering the run list. A tag the run has is not added twice, so
 * a replay adding them again changes nothing. Adding past 10 tags changes nothing and logs an
 * error, as Trigger.dev does.
 *
 * @example
 * await tags.add(`user:${payload.userId}`);
 * await tags.add(["priority", "eu"]);
 */
export const tags = {
  async add(tags: string | string[]): Promise<void> {
    const execution = requireExecution("tags.add");
    const wanted = normalizeTags(tags);
    if (wanted.length === 0) return;
    const result = await execution.addTags(wanted);
    if (!result.ok) logger.error(`Runs can only have 10 tags, you're trying to set ${result.wanted}.`, { existingTags: result.tags, newTags: wanted });
  },
};
