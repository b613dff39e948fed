/**
 * The rate limits of limited queues (migration 0047, docs/rate-limits.md): at most `limit` starts
 * of a queue's runs in any window of `period`, per rate key (runs.rate_limit_key; runs without one
 * share the key ''), and a run's own bound when its trigger gave one (runs.rate_limit and
 * rate_period_ms, migration 0055): both hold. Exact, not a bucket that lets a burst through after a
 * quiet period: each (queue, key, period) keeps a sliding log of its starts in that period
 * (rate_limit_windows), written
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
 * their rate key `rk`, their own bound `rl`/`rp` and `start`): `rate` (rateCte) and `rate_used`
 * (rateUsedCte over `ready`).
 */
export function rateUsedCtes(env: string, queue: string, now: string): string {
  return `${rateCte(env, queue)}${rateUsedCte(env, queue, now)}`;
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

/** What the limited claim reads of a ready run `r` for its rate: its key `rk` and its own bound (`rl` starts in `rp` ms; NULL: none). */
export const RATE_COLUMNS = `coalesce(r.rate_limit_key, '') AS rk, r.rate_limit AS rl, r.rate_period_ms AS rp`;

/**
 * The log (`started_at`, `started_n`) that counts the starts of rate key `rk` of a queue in a
 * window of `ms` (SQL texts), as a derived table: its log of that period; a period none of its
 * logs keeps yet (a trigger's own, first seen) reads the key's longest log, which holds every
 * start of its own period.
 */
function rateLog(env: string, queue: string, rk: string, ms: string): string {
  return `(SELECT w.started_at, w.started_n FROM rate_limit_windows w
           WHERE w.environment_id = ${env} AND w.queue_name = ${queue} AND w.rate_key = ${rk}
           ORDER BY w.period_ms = ${ms} DESC, w.period_ms DESC LIMIT 1)`;
}

/**
 * A CTE (with its leading comma) after `rate` and the CTE `keys` (ready runs with `rk`, `rp` and
 * `start`): `name` (rate_used), for each rate key of `keys`' starts and each period that bounds
 * one of them (the queue's, a run's own), how many starts its log holds in that period before
 * `now`.
 */
export function rateUsedCte(env: string, queue: string, now: string, name = "rate_used", keys = "ready"): string {
  return `,
     ${name} AS (
       SELECT p.rk, p.ms, coalesce((
           SELECT sum(e.n) FROM ${rateLog(env, queue, "p.rk", "p.ms")} s CROSS JOIN LATERAL unnest(s.started_at, s.started_n) AS e(at, n)
           WHERE e.at > ${now}::timestamptz - make_interval(secs => p.ms / 1000.0)), 0) AS used
       FROM (SELECT k.rk, k.rp AS ms FROM ${keys} k WHERE k.start AND k.rp IS NOT NULL
             UNION SELECT k.rk, rate.ms FROM ${keys} k CROSS JOIN rate WHERE k.start) p)`;
}

/**
 * The joins that give a ready run `x` its key's starts in the queue's period (`rq`) and in its own
 * (`ro`), from the CTE `used` (rateUsedCte).
 */
export function rateUsedJoins(used = "rate_used"): string {
  return `LEFT JOIN ${used} rq ON rq.rk = x.rk AND rq.ms = (SELECT rate.ms FROM rate) LEFT JOIN ${used} ro ON ro.rk = x.rk AND ro.ms = x.rp`;
}

/**
 * The condition on a ready run `x` (`start`: a QUEUED run; `rate_rank`: its place among its key's
 * ready starts, oldest first), joined by rateUsedJoins, that lets a claim take it: a resume always,
 * a start when, counting the starts its key made in each period that bounds it and the ready starts
 * ranked before it, its own bound and its queue's both hold. A start ranked before it that is held
 * back still counts: a claim may start fewer than a bound allows, never more.
 */
export const RATE_ALLOWS = `(NOT x.start OR ((x.rp IS NULL OR x.rate_rank + coalesce(ro.used, 0) <= x.rl)
           AND x.rate_rank + coalesce(rq.used, 0) <= coalesce((SELECT rate.n FROM rate), 2147483647)))`;

/**
 * How finely a key's log keeps time: a start is recorded at the next 1/RATE_LOG_STEPS of the
 * period (a whole number of ms, at least 1). So a log holds at most about RATE_LOG_STEPS entries
 * whatever the limit, and a slot frees at most 1/RATE_LOG_STEPS of the period late. Never early:
 * a start recorded later than it was made leaves the window later, so the limit still holds for
 * the starts' true times.
 */
export const RATE_LOG_STEPS = 100;

/**
 * CTEs (each with its leading comma) after the claim's CTE `claimed` (whose `picked` carries `rk`
 * and `rp`): `rate_started`, the starts it made per rate key, and `rate_taken`, which records them
 * in every log of their key (each at `now` rounded up to that log's step, merged with an entry of
 * that time, dropping entries that left its period): the logs the key has, and those of the periods
 * that bound the runs it started (the queue's, theirs). A new log starts from the entries of the
 * key's longest log within its period, so the first run with a longer period than any before it
 * counts the starts that log kept. Writes nothing for starts no rate bounds.
 */
export function rateTakenCte(env: string, queue: string, now: string): string {
  const step = `greatest(1, t.ms / ${RATE_LOG_STEPS})`;
  const fresh = `NOT EXISTS (SELECT 1 FROM rate_limit_windows x
             WHERE x.environment_id = ${env} AND x.queue_name = ${queue} AND x.rate_key = t.rk AND x.period_ms = t.ms)`;
  return `,
     rate_started AS (
       SELECT p.rk, count(*)::int AS n, array_agg(DISTINCT p.rp) FILTER (WHERE p.rp IS NOT NULL) AS own
       FROM claimed c JOIN picked p ON p.id = c.id
       WHERE c.previous_status = 'QUEUED' AND (p.rp IS NOT NULL OR EXISTS (SELECT 1 FROM rate))
       GROUP BY p.rk),
     rate_taken AS (
       INSERT INTO rate_limit_windows AS w (environment_id, queue_name, rate_key, period_ms, started_at, started_n)
       SELECT ${env}, ${queue}, t.rk, t.ms, s.at, s.n
       FROM (
         SELECT g.rk, g.n, l.ms FROM rate_started g CROSS JOIN LATERAL (
           SELECT w.period_ms AS ms FROM rate_limit_windows w WHERE w.environment_id = ${env} AND w.queue_name = ${queue} AND w.rate_key = g.rk
           UNION SELECT unnest(g.own) UNION SELECT rate.ms FROM rate) l) t
       CROSS JOIN LATERAL (
         SELECT array_agg(e.at ORDER BY e.at) AS at, array_agg(e.n ORDER BY e.at) AS n FROM (
           SELECT e.at, sum(e.n)::int AS n FROM (
             SELECT to_timestamp((ceil(extract(epoch FROM ${now}::timestamptz) * 1000 / ${step}) * ${step} / 1000.0)::float8) AS at, t.n
             UNION ALL
             SELECT e.at, e.n FROM (
               SELECT w.started_at, w.started_n FROM rate_limit_windows w
               WHERE w.environment_id = ${env} AND w.queue_name = ${queue} AND w.rate_key = t.rk AND ${fresh}
               ORDER BY w.period_ms DESC LIMIT 1) o CROSS JOIN LATERAL unnest(o.started_at, o.started_n) AS e(at, n)
             WHERE e.at > ${now}::timestamptz - make_interval(secs => t.ms / 1000.0)) e
           GROUP BY e.at) e) s
       ON CONFLICT (environment_id, queue_name, rate_key, period_ms) DO UPDATE SET (started_at, started_n) = (
         SELECT array_agg(e.at ORDER BY e.at), array_agg(e.n ORDER BY e.at) FROM (
           SELECT o.at, sum(o.n)::int AS n FROM (
             SELECT o.at, o.n FROM unnest(w.started_at, w.started_n) AS o(at, n)
             WHERE o.at > ${now}::timestamptz - make_interval(secs => w.period_ms / 1000.0)
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
       SELECT r.id, r.tid, r.rk, r.rl, r.rp, true AS start, r.rate_delayed_at,
         row_number() OVER (PARTITION BY r.rk ORDER BY r.created_at, r.id) AS rate_rank
       FROM (
         SELECT r.id, r.ctid AS tid, ${RATE_COLUMNS}, r.rate_delayed_at, r.created_at FROM runs r
         WHERE r.environment_id = $1 AND r.queue_name = $2 AND NOT r.claim_from_runs
           AND r.status = 'QUEUED' AND r.available_at IS NULL AND r.task_identifier = ANY ($3::text[])
         ORDER BY r.created_at, r.id LIMIT 1000) r)${rateUsedCtes("$1", "$2", "$4")},
     held AS (
       SELECT x.id, x.tid FROM ready x ${rateUsedJoins()}
       WHERE x.rate_delayed_at IS NULL AND NOT ${RATE_ALLOWS}),
     marked AS (
       -- By tuple id, as the claims find their runs (claimPicked): a run updated since this
       -- statement's snapshot is left for the next pass.
       UPDATE runs r SET rate_delayed_at = $4 FROM held
       WHERE r.ctid = held.tid AND r.id = held.id AND r.status = 'QUEUED' AND r.rate_delayed_at IS NULL
       RETURNING 1)
     SELECT count(*)::int AS marked FROM marked`;
