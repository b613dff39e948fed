import type { Queryable } from "../../db/queryable.ts";

/** Of a worker's queues, those whose live runs need their queue's limited claim for a reason of their own. */
export interface QueuesWithLiveRuns {
  /** Runs that hold a named concurrency limit (index runs_named_live): claimed under the named limits' lock. */
  named: string[];
  /** Runs with gates (runs_gated_live): claimed holding their gate queues' locks too. */
  gated: string[];
  /** Runs with their own rate (runs_own_rate_live): claimed as a rate-limited queue is, with a timer for the next slot. */
  ownRated: string[];
}

/**
 * Of the queues `names` of an environment, those with live runs that hold a named limit
 * (migration 0048), have gates (0049) or carry their own rate (0055), in one statement: three
 * probes of partial indexes per queue (workers' ready-runs.ts).
 */
export async function queuesWithLiveRuns(db: Queryable, environmentId: string, names: string[]): Promise<QueuesWithLiveRuns> {
  const live = `r.environment_id = $1 AND r.queue_name = q.name AND r.list_status = 'LIVE'`;
  const { rows } = await db.query<{ name: string; named: boolean; gated: boolean; own_rated: boolean }>(
    `SELECT q.name,
       EXISTS (SELECT 1 FROM runs r WHERE ${live} AND r.concurrency_limits IS NOT NULL) AS named,
       EXISTS (SELECT 1 FROM runs r WHERE ${live} AND r.gates IS NOT NULL) AS gated,
       EXISTS (SELECT 1 FROM runs r WHERE ${live} AND r.rate_limit IS NOT NULL) AS own_rated
     FROM unnest($2::text[]) AS q(name)`,
    [environmentId, names],
  );
  return {
    named: rows.filter((r) => r.named).map((r) => r.name),
    gated: rows.filter((r) => r.gated).map((r) => r.name),
    ownRated: rows.filter((r) => r.own_rated).map((r) => r.name),
  };
}
