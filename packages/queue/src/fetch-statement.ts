import type { QueueDb } from "./consumer.ts";

/**
 * pg-boss's fetch statement (plans.fetchNextJob) with its UPDATE reaching the rows the statement
 * selected (and locked) by their tuple ids: a TID scan, whatever the statistics say; null when
 * the text is not the one this rewrites (another pg-boss version), and the caller runs pg-boss's
 * text as it is.
 *
 * Why: a queue's job table is empty, then full, then empty again, and an ANALYZE (or VACUUM) run
 * while it holds no live row records zero rows. The planner then expects one row everywhere and
 * may join the selected jobs to the table the cheap-looking way round: reading every row of the
 * queue, dead ones included, and comparing each with every selected id. With a backlog that made
 * each fetch take ~190 ms instead of ~1 ms (5,000 jobs queued, 200 fetched), and a batched round
 * ran at a quarter of its speed until the next ANALYZE saw rows again (bench/README.md). pg-boss's
 * own remedy for its group-concurrency fetch, `id = ANY (ARRAY(…))`, still reads the whole queue
 * under those statistics (the planner keeps the id out of the index condition). The rows are locked
 * by the statement's own FOR UPDATE, so their tuple ids cannot change before the UPDATE reads them.
 */
export function fetchByTupleIds(text: string): string | null {
  const selecting = /(\bnext AS \(\s*SELECT j\.id)(\s+FROM )/;
  const updating = /\bFROM next\s+WHERE name = '(?:[^']|'')*' AND j\.id = next\.id\b/;
  if (!selecting.test(text) || !updating.test(text)) return null;
  return text
    .replace(selecting, (_, head: string, from: string) => `${head}, j.ctid${from}`)
    // Only the tuple ids: with the queue's name in the condition too, the planner may still
    // prefer reading the queue by name (one row, it believes) to the TID scan.
    .replace(updating, () => `WHERE j.ctid = ANY (ARRAY(SELECT ctid FROM next))`);
}

/** `db` (pg-boss's own connection when none is given) with fetch statements rewritten by fetchByTupleIds. */
export function fetchingByTupleIds(db: QueueDb): QueueDb {
  return {
    executeSql: (text, values) => db.executeSql(fetchByTupleIds(text) ?? text, values),
  };
}
