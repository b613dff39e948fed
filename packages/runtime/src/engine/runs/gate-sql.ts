/**
 * Gates (runs.gates, migration 0049) in the limited claim (CLAIM_LIMITED_SQL): a gated run starts
 * or resumes only when, besides its own queue's limit, each gate's pool has room. A gate
 * `{ queue: Q, concurrencyKey: K }` names the pool (Q, K) (no key: Q's runs without one, as a
 * queue's own keys go). The pool's bound is Q's limit as svc_queue_limit gives it (none: 2147483647,
 * the gate gates nothing), and it holds Q's own EXECUTING runs of key K plus the EXECUTING runs of
 * any queue gated on (Q, K): a run is counted once in a pool, so a run of Q of key K gated on (Q, K)
 * is counted as Q's own. The reverse holds in Q's own claim: its key K counts the runs gated on
 * (Q, K) that execute (gated_running).
 *
 * Every claim that can start a run counted in Q's pools holds Q's advisory lock: Q's own claim, and
 * a claim of a queue whose ready runs are gated on Q (GATE_QUEUE_LOCKS_SQL took the locks, and
 * `$10` lists the queues it locked). Each therefore counts what the ones before it committed, as a
 * queue's own claims do. A gated run whose gates are not all in `$10` is left for a later claim.
 *
 * Pieces of CLAIM_LIMITED_SQL, kept here so that gates read apart from the rest of the claim; they
 * use its parameters `$1` (environment), `$2` (queue) and `$10` (the locked queues), and its
 * CTE `ready`, whose rows carry `gates` and the run's own key `k`.
 */

/** A gate of run `r` as a row (queue, key): jsonb_to_recordset of runs.gates. */
const GATES_OF = (gates: string) => `jsonb_to_recordset(${gates}) AS g(queue text, "concurrencyKey" text)`;

/**
 * Part of `ready`'s WHERE, on run `r`: a gated run is ready only when this claim holds every gate
 * queue's lock, and a start only when no gate queue is paused (its resumes go on, as a paused
 * queue's own do).
 */
export const GATE_READY = `(r.gates IS NULL OR (
           NOT EXISTS (SELECT 1 FROM ${GATES_OF("r.gates")} WHERE g.queue <> ALL ($10::text[]))
           AND NOT (r.status = 'QUEUED' AND EXISTS (
             SELECT 1 FROM ${GATES_OF("r.gates")} JOIN queues q ON q.environment_id = $1 AND q.name = g.queue WHERE q.paused))))`;

/**
 * CTEs (each with its leading comma), after `ready`:
 * - gated_running: per key of this queue, the EXECUTING runs gated on it that are not its own runs
 *   of that key (those the claim's `running` counts already). An index probe (runs_gated_executing)
 *   that finds nothing where no run is gated.
 * - gate_of: each gate of each ready run, but the run's own pool (its own check covers it).
 * - gate_pool: each pool gate_of names, with its bound and the runs it holds now.
 * - gate_blocked: ready runs that some pool has no room for. A pool's ready runs are ranked oldest
 *   first, with this queue's own ready runs of a pool of this queue that a gate names (a run of
 *   key A gated on key B of its own queue takes B's room beside B's own runs).
 */
export const GATE_CTES = `,
     gated_running AS (
       SELECT coalesce(g."concurrencyKey", '') AS k, count(*) AS n FROM runs r CROSS JOIN LATERAL ${GATES_OF("r.gates")}
       WHERE r.environment_id = $1 AND r.status = 'EXECUTING' AND r.gates IS NOT NULL AND g.queue = $2
         AND NOT (r.queue_name = $2 AND coalesce(r.concurrency_key, '') = coalesce(g."concurrencyKey", ''))
       GROUP BY 1),
     gate_of AS (
       SELECT ready.id, ready.created_at, g.queue AS q, coalesce(g."concurrencyKey", '') AS k
       FROM ready CROSS JOIN LATERAL ${GATES_OF("ready.gates")}
       WHERE ready.gates IS NOT NULL AND NOT (g.queue = $2 AND coalesce(g."concurrencyKey", '') = ready.k)),
     gate_pool AS (
       SELECT p.q, p.k, l.n AS lim,
         (SELECT count(*) FROM runs r
          WHERE r.environment_id = $1 AND r.queue_name = p.q AND r.status = 'EXECUTING' AND NOT r.claim_from_runs AND coalesce(r.concurrency_key, '') = p.k)
         + (SELECT count(*) FROM runs r CROSS JOIN LATERAL ${GATES_OF("r.gates")}
            WHERE r.environment_id = $1 AND r.status = 'EXECUTING' AND r.gates IS NOT NULL AND g.queue = p.q AND coalesce(g."concurrencyKey", '') = p.k
              AND NOT (r.queue_name = p.q AND coalesce(r.concurrency_key, '') = p.k)) AS running
       FROM (SELECT DISTINCT q, k FROM gate_of) p CROSS JOIN LATERAL svc_queue_limit($1, p.q) l),
     gate_blocked AS (
       SELECT DISTINCT m.id FROM (
         SELECT m.id, m.q, m.k, row_number() OVER (PARTITION BY m.q, m.k ORDER BY m.created_at, m.id) AS rank FROM (
           SELECT id, created_at, q, k FROM gate_of
           UNION ALL
           SELECT ready.id, ready.created_at, $2, ready.k FROM ready WHERE EXISTS (SELECT 1 FROM gate_of o WHERE o.q = $2 AND o.k = ready.k)) m) m
       JOIN gate_pool p ON p.q = m.q AND p.k = m.k
       WHERE m.rank + p.running > p.lim)`;

/** The join of `picked` (ranked runs `x`) to gated_running: `gr.n`, the runs gated on x's key of this queue. */
export const GATED_RUNNING_JOIN = `LEFT JOIN gated_running gr ON gr.k = x.k`;

/** Part of `picked`'s WHERE: no gate's pool is full for run `x`. */
export const GATES_ALLOW = `NOT EXISTS (SELECT 1 FROM gate_blocked gb WHERE gb.id = x.id)`;
