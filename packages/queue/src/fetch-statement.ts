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
 * ran at a quarter of its speed until the next ANALYZE saw rows again (measured 25 Nov). pg-boss's
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

/**
 * pg-boss's fetch statement with its batch size (the `LIMIT` of its `next` CTE) as a parameter
 * rather than a literal: then a queue's fetch is one text whatever the free slots, and a
 * connection can prepare it once (planning the fetch with a worker's claims takes ~0.5 ms, longer
 * than running it for a few jobs). Null when the text is not the one this rewrites.
 */
export function fetchWithBatchSizeParameter(text: string, values: unknown[] | undefined): { text: string; values: unknown[] } | null {
  const limit = /(\bnext AS \(\s*SELECT j\.id[\s\S]*?\bLIMIT )(\d+)(\s+FOR UPDATE OF j\b)/;
  const found = limit.exec(text);
  if (!found) return null;
  const params = values ?? [];
  return {
    text: text.replace(limit, (_, head: string, _n: string, tail: string) => `${head}$${params.length + 1}::int${tail}`),
    values: [...params, Number(found[2])],
  };
}

/** A handled job to delete, fenced by the attempt this consumer held (pg-boss's `{ id, retryCount }`). */
export interface HandledJob {
  id: string;
  retryCount: number;
}

/**
 * pg-boss's fetch statement (as fetchByTupleIds leaves it, or as pg-boss wrote it) that also
 * deletes `handled` jobs of the same queue, in a CTE of its own: a worker's handled jobs ride on
 * its next fetch instead of a DELETE of their own. The deletion is deleteJob's with `{ id,
 * retryCount }`: only jobs still active at the attempt this worker held, so a job redelivered to
 * another worker meanwhile is left alone. It touches only active rows and the fetch only queued
 * ones, and a data-modifying CTE runs whether or not the rest of the statement reads it. Null when
 * the text is not a fetch this recognizes (another pg-boss version, a queue's other fetch forms):
 * the caller deletes them its own way.
 */
export function fetchDeleting(text: string, values: unknown[] | undefined, handled: HandledJob[]): { text: string; values: unknown[] } | null {
  const fetching = /\bnext AS \(\s*SELECT j\.id(?:, j\.ctid)?\s+FROM (\S+) j\s+WHERE j\.name = '((?:[^']|'')*)'/.exec(text);
  if (!fetching || !/^\s*WITH\s/.test(text)) return null;
  const [, table, quotedName] = fetching;
  const params = values ?? [];
  const ids = `$${params.length + 1}`;
  const attempts = `$${params.length + 2}`;
  const deleting = `handled AS (
        DELETE FROM ${table} WHERE name = '${quotedName}' AND id = ANY (${ids}::uuid[])
          AND state = 'active' AND (id::text || ':' || retry_count::text) = ANY (${attempts}::text[])
      ),`;
  return {
    text: text.replace(/^\s*WITH\s/, (head) => `${head}${deleting}\n      `),
    values: [...params, handled.map((j) => j.id), handled.map((j) => `${j.id}:${j.retryCount}`)],
  };
}

/**
 * What a fetch of a queue also does with the jobs it fetches, in the same statement
 * (ConsumerOptions.fetchAlso): a worker claims the runs of its start jobs there, one statement
 * per fetch instead of two.
 */
export interface FetchTail {
  /**
   * CTEs that follow `fetched` (the fetched jobs: pg-boss's RETURNING columns, `id` and `data`
   * among them), without a leading comma; their parameters are numbered from `first`.
   */
  ctes(first: number): string;
  /** An expression over a fetched job `f` and `joins`, returned with it as ConsumedJob.fetchedWith. */
  column: string;
  /** Joins to the CTEs, after `FROM fetched f` (a join, not a subquery per job: that would read the CTEs once per job). */
  joins?: string;
  values: unknown[];
}

/**
 * pg-boss's fetch statement (as fetchByTupleIds and fetchDeleting leave it, or as pg-boss wrote
 * it) with its UPDATE as the CTE `fetched`, `tail`'s CTEs after it, and a SELECT that returns the
 * fetched rows as pg-boss's statement did, with `tail.column` as one more column (`svc_with`),
 * which pg-boss's fetch passes through. If any part fails, nothing is fetched: the jobs stay
 * queued. Null when the text is not a fetch this recognizes: the caller fetches as pg-boss does.
 */
export function fetchWithTail(text: string, values: unknown[] | undefined, tail: FetchTail): { text: string; values: unknown[] } | null {
  const updating = /\bUPDATE \S+ j SET\b/g;
  const found = [...text.matchAll(updating)];
  if (found.length !== 1 || !/^\s*WITH\s/.test(text) || !/\bRETURNING j\.[^()]*$/.test(text)) return null;
  const at = found[0]!.index!;
  const params = values ?? [];
  return {
    text: `${text.slice(0, at)}, fetched AS (${text.slice(at)}),
      ${tail.ctes(params.length + 1)}
      SELECT f.*, ${tail.column} AS svc_with FROM fetched f ${tail.joins ?? ""}`,
    values: [...params, ...tail.values],
  };
}

/**
 * The statement a consumer sends for pg-boss's fetch `text`: reaching its rows by tuple id, its
 * batch size a parameter (`constant`: then one text per queue, fit to prepare), carrying the
 * deletion of `handled` jobs (`carried`) and `tail`, each where the text is recognized.
 */
export function consumerFetch(
  text: string,
  values: unknown[] | undefined,
  also: { handled?: HandledJob[] | null; tail?: FetchTail | null } = {},
): { text: string; values: unknown[]; constant: boolean; carried: boolean } {
  let statement = { text: fetchByTupleIds(text) ?? text, values: values ?? [] };
  const constant = fetchWithBatchSizeParameter(statement.text, statement.values);
  if (constant) statement = constant;
  const deleting = also.handled ? fetchDeleting(statement.text, statement.values, also.handled) : null;
  if (deleting) statement = deleting;
  if (also.tail) statement = fetchWithTail(statement.text, statement.values, also.tail) ?? statement;
  return { ...statement, constant: constant !== null, carried: deleting !== null };
}
