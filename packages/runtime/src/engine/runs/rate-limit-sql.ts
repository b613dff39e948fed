/**
 * The rate limits of limited queues (migration 0047, docs/rate-limits.md): at most `limit` starts
 * of a queue's runs in any window of `period`, per rate key (runs.rate_limit_key; runs without one
 * share the key ''). Exact, not a bucket that lets a burst through after a quiet period: each
 * (queue, key) keeps a sliding log of its starts in its last period (rate_limit_windows), written
 * by the queue's claim (CLAIM_LIMITED_SQL) under the queue's advisory lock, in the statement that
 * claims. Claims of one queue take turns, so every claim counts the starts of the ones before it,
 * whatever number of workers claim. Only starts count (a QUEUED run's claim: a first attempt or a
 * retry), not resumes. Time is the claim's `now`: the workers' clocks must agree (NTP).
 *
 * These are pieces of CLAIM_LIMITED_SQL, kept here so that the rate limit reads apart from the
 * concurrency limit it shares the claim with. `env`, `queue` and `now` are the claim's parameters.
 */

/**
 * CTEs (each with its leading comma) for the limited claim, after its CTE `ready` (ready runs with
 * their rate key `rk`): `rate` (rateCte) and `rate_room` (rateRoomCte over `ready`).
 */
export function rateRoomCtes(env: string, queue: string, now: string): string {
  return `${rateCte(env, queue)}${rateRoomCte(env, queue, now)}`;
}

/**
 * A CTE (with its leading comma), `rate`: the queue's rate limit (the lowest rate any of its tasks
 * registered; no row: none).
 */
export function rateCte(env: string, queue: string): string {
  return `,
     rate AS (
       SELECT wt.rate_limit AS n, wt.rate_period_ms AS ms FROM worker_tasks wt
       WHERE wt.environment_id = ${env} AND wt.queue_name = ${queue} AND wt.rate_limit IS NOT NULL
       ORDER BY wt.rate_limit::float8 / wt.rate_period_ms, wt.rate_period_ms DESC LIMIT 1)`;
}

/**
 * A CTE (with its leading comma) after `rate` and the CTE `keys` (runs with their rate key `rk`):
 * `name` (rate_room), how many more runs each key of `keys` may start at `now` (a key without a
 * row may start `rate.n`).
 */
export function rateRoomCte(env: string, queue: string, now: string, name = "rate_room", keys = "ready"): string {
  return `,
     ${name} AS (
       SELECT w.rate_key AS rk, rate.n - (
           SELECT coalesce(sum(e.n), 0) FROM unnest(w.started_at, w.started_n) AS e(at, n)
           WHERE e.at > ${now}::timestamptz - make_interval(secs => rate.ms / 1000.0)) AS n
       FROM rate_limit_windows w CROSS JOIN rate
       WHERE w.environment_id = ${env} AND w.queue_name = ${queue} AND w.rate_key IN (SELECT DISTINCT rk FROM ${keys}))`;
}

/**
 * The rate key of a run `r` of a limited queue, '' for none (one namespace with the keys triggers give).
 */
export const RATE_KEY = `coalesce(r.rate_limit_key, '')`;

/** The join that gives a ready run `x` its key's room (`rr`, none for a key without a log). */
export const RATE_ROOM_JOIN = `LEFT JOIN rate_room rr ON rr.rk = x.rk`;

/**
 * The condition on a ready run `x` of CTE `ranked` (`start`: a QUEUED run; `rate_rank`: its place
 * among its key's ready starts, oldest first), joined to its room by RATE_ROOM_JOIN, that lets a
 * claim take it: a resume always, a start when its key has room for it.
 */
export const RATE_ALLOWS = `(NOT x.start OR x.rate_rank <= coalesce(rr.n, (SELECT rate.n FROM rate), 2147483647))`;

/**
 * How finely a key's log keeps time: a start is recorded at the next 1/RATE_LOG_STEPS of the
 * period (a whole number of ms, at least 1). So a log holds at most about RATE_LOG_STEPS entries
 * whatever the limit, and a slot frees at most 1/RATE_LOG_STEPS of the period late. Never early:
 * a start recorded later than it was made leaves the window later, so the limit still holds for
 * the starts' true times.
 */
export const RATE_LOG_STEPS = 100;

/**
 * A CTE (with its leading comma) after the claim's CTE `claimed` (whose `picked` carries `rk`):
 * records the starts it made in their keys' logs (at `now` rounded up to the log's step, merged
 * with an entry of that time), dropping entries that left the period. Writes nothing in a queue
 * without a rate limit.
 */
export function rateTakenCte(env: string, queue: string, now: string): string {
  const step = `greatest(1, rate.ms / ${RATE_LOG_STEPS})`;
  return `,
     rate_taken AS (
       INSERT INTO rate_limit_windows AS w (environment_id, queue_name, rate_key, started_at, started_n)
       SELECT ${env}, ${queue}, p.rk,
         ARRAY[(SELECT to_timestamp((ceil(extract(epoch FROM ${now}::timestamptz) * 1000 / ${step}) * ${step} / 1000.0)::float8) FROM rate)],
         ARRAY[count(*)::int]
       FROM claimed c JOIN picked p ON p.id = c.id
       WHERE c.previous_status = 'QUEUED' AND EXISTS (SELECT 1 FROM rate)
       GROUP BY p.rk
       ON CONFLICT (environment_id, queue_name, rate_key) DO UPDATE SET (started_at, started_n) = (
         SELECT array_agg(e.at ORDER BY e.at), array_agg(e.n ORDER BY e.at) FROM (
           SELECT o.at, sum(o.n)::int AS n FROM (
             SELECT o.at, o.n FROM unnest(w.started_at, w.started_n) AS o(at, n)
             WHERE o.at > ${now}::timestamptz - (SELECT make_interval(secs => rate.ms / 1000.0) FROM rate)
             UNION ALL SELECT EXCLUDED.started_at[1], EXCLUDED.started_n[1]) AS o
           GROUP BY o.at) AS e))`;
}

/**
 * The prepared statement svc_rate_next_due, run after a claim of a rate-limited queue in its
 * transaction (under the queue's lock) when the claim took fewer runs than it could: of the ready
 * starts of queue `$2` of environment `$1` whose task is one of `$3` (the claim's window: its
 * oldest LIMITED_CLAIM_WINDOW ready runs), how many wait for their key's rate (`waiting`) and when
 * the first of them may start (`due_at`, null when none waits): sql/functions/svc_rate_wait.sql.
 * $4 now. The worker sets a timer to claim then, rather than polling faster.
 */
export const RATE_NEXT_DUE_SQL = `SELECT w.due_at, w.waiting FROM svc_rate_wait($1, $2, $3::text[], $4, 1000) w`;

/**
 * The prepared statement svc_rate_mark_delayed, run after svc_rate_next_due when it found runs
 * waiting, in the same transaction (under the queue's lock): marks the ready starts of queue `$2`
 * of environment `$1` (tasks `$3`, the claim's window) that wait for their key's rate at `$4` and
 * were never marked (runs.rate_delayed_at), and returns how many it marked: each run is counted
 * once, by one worker (svc_runs_rate_delayed_total). Only a queue whose rate binds pays for it.
 */
export const RATE_MARK_DELAYED_SQL = `WITH ready AS (
       SELECT r.id, ${RATE_KEY} AS rk, r.rate_delayed_at,
         row_number() OVER (PARTITION BY ${RATE_KEY} ORDER BY r.created_at, r.id) AS rank
       FROM (
         SELECT r.id, r.rate_limit_key, r.rate_delayed_at, r.created_at FROM runs r
         WHERE r.environment_id = $1 AND r.queue_name = $2 AND NOT r.claim_from_runs
           AND r.status = 'QUEUED' AND r.available_at IS NULL AND r.task_identifier = ANY ($3::text[])
         ORDER BY r.created_at, r.id LIMIT 1000) r)${rateRoomCtes("$1", "$2", "$4")},
     held AS (
       SELECT x.id FROM ready x ${RATE_ROOM_JOIN}
       WHERE x.rate_delayed_at IS NULL AND x.rank > coalesce(rr.n, (SELECT rate.n FROM rate), 2147483647)),
     marked AS (
       UPDATE runs r SET rate_delayed_at = $4 FROM held
       WHERE r.id = held.id AND r.status = 'QUEUED' AND r.rate_delayed_at IS NULL
       RETURNING 1)
     SELECT count(*)::int AS marked FROM marked`;
