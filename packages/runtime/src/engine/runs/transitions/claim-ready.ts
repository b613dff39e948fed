import { RETURN_CLAIMED, SELECT_CLAIMED_READY_WITH_LEDGER } from "../claimed-columns.ts";
import { statusGuard, transition } from "../statuses.ts";
import { versionSeenTouch } from "../../workers/worker-versions.ts";
import { GATE_CTES, GATE_READY, GATED_RUNNING_JOIN, GATES_ALLOW } from "../gate-sql.ts";
import { RATE_ALLOWS, RATE_COLUMNS, rateCte, rateTakenCte, rateUsedCte, rateUsedJoins } from "../rate-limit-sql.ts";

/**
 * A worker claims runs of its tasks straight from `runs`: the run row is the queue entry. Two
 * claims, one UPDATE (claimPicked): the plain claim (CLAIM_READY_SQL) and a limited queue's
 * (CLAIM_LIMITED_SQL). Two kinds of run, one statement: a QUEUED run whose start is due (a new attempt) and a WAITING run whose
 * resume is due (`resume_due_at` set, same attempt). The claim gives the run a lease that its
 * worker renews while the code runs; an execution that dies lets it lapse, and the lapse pass
 * (timers/lapsed-leases.ts) queues the run again or ends it CRASHED.
 */
export const CLAIM_START = transition(["QUEUED"], "EXECUTING");
export const CLAIM_RESUME = transition(["WAITING"], "EXECUTING");

/** Both sources, as one guard. */
const READY = transition([...CLAIM_START.from, ...CLAIM_RESUME.from], "EXECUTING");

/** A QUEUED run `r` that a claim may start at `now` (a parameter's text). */
export const startDue = (now: string) => `${statusGuard("r.status", CLAIM_START)} AND r.available_at IS NULL AND (r.expire_at IS NULL OR r.expire_at > ${now})`;
/** A WAITING run `r` whose resume is due. */
export const resumeDue = `${statusGuard("r.status", CLAIM_RESUME)} AND r.resume_due_at IS NOT NULL`;

/**
 * What a claim does to the runs of the CTE `picked` (id, status as locked): the claim's UPDATE and
 * the claimed runs with their ledgers, as the rest of a statement after `picked`. `worker`,
 * `version`, `now` and `leaseMs` are the parameters that give them. One text for the plain claim
 * and the limited queues' claim (CLAIM_LIMITED_SQL, below). `after`: more CTEs (each with its
 * leading comma) that read `claimed`.
 *
 * `picked` carries each run's tuple id (`tid`), and the UPDATE finds the run by it. Joined by id,
 * the UPDATE was planned as a scan of the whole table whenever the connection's cached plan was
 * made while `runs` was small or not yet analyzed, and kept it as the table grew
 * (test/run-lookup-plans.test.ts). A run another transaction updated after this statement's
 * snapshot (and left ready) has a tuple id the UPDATE cannot see: it is not claimed this time and
 * stays ready for the next claim (the worker's poll, at the latest), as a run another claim held.
 */
export function claimPicked(worker: string, version: string, now: string, leaseMs: string, after = ""): string {
  return `claimed AS (
       UPDATE runs r SET status = '${READY.to}',
         attempt_number = CASE WHEN picked.status = '${CLAIM_START.from[0]}' THEN r.attempt_number + 1 ELSE r.attempt_number END,
         claim_token = gen_random_uuid()::text, worker_id = ${worker}, worker_version = ${version},
         available_at = NULL, expire_at = NULL, resume_due_at = NULL, offered_at = NULL, offered_start = false,
         lease_expires_at = ${now}::timestamptz + make_interval(secs => ${leaseMs}::double precision / 1000),
         started_at = coalesce(r.started_at, ${now}), updated_at = ${now}
       FROM picked WHERE r.ctid = picked.tid AND r.id = picked.id AND ${statusGuard("r.status", READY)}
       RETURNING ${RETURN_CLAIMED}, picked.status AS previous_status)${versionSeenTouch(version, now)}${after}
     ${SELECT_CLAIMED_READY_WITH_LEDGER}`;
}

/**
 * The prepared statement svc_claim_ready: up to `$3` runs of environment `$1` whose task is one of
 * `$2` and whose queue has no concurrencyLimit (`claim_from_runs`), resumes first (their runs are
 * under way), then starts, oldest first; rows another claim holds are skipped (SKIP LOCKED: workers
 * never wait on each other). A run whose TTL passed is left to the expiry pass. The partial indexes
 * runs_resumable and runs_queued hold only such runs, so a claim reads its batch, not the history;
 * their last key column is the task, so that other tasks' ready runs are passed over in the index
 * rather than fetched (Postgres 17 and later: migration 0056).
 * $4 worker id, $5 worker version, $6 now, $7 the lease in ms. Constant text.
 */
export const CLAIM_READY_SQL = `WITH resumes AS (
       SELECT r.id, r.status, r.ctid AS tid FROM runs r
       WHERE r.environment_id = $1 AND ${resumeDue} AND r.claim_from_runs AND r.task_identifier = ANY ($2::text[])
       ORDER BY r.resume_due_at, r.id
       LIMIT $3 FOR UPDATE OF r SKIP LOCKED),
     starts AS (
       SELECT r.id, r.status, r.ctid AS tid FROM runs r
       WHERE r.environment_id = $1 AND ${startDue("$6")} AND r.claim_from_runs AND r.task_identifier = ANY ($2::text[])
       ORDER BY r.created_at, r.id
       LIMIT $3 - (SELECT count(*) FROM resumes) FOR UPDATE OF r SKIP LOCKED),
     picked AS (SELECT * FROM resumes UNION ALL SELECT * FROM starts),
     ${claimPicked("$4", "$5", "$6", "$7")}`;

/**
 * How many of a limited queue's ready runs, oldest first, a claim that ranks (LIMITED_READY_HEAD
 * says when) looks through to find runs whose concurrency key has a free slot. A key whose runs
 * all sit behind this many runs of keys that are at their limit waits until those move.
 */
export const LIMITED_CLAIM_WINDOW = 1000;

/** Has the rest of a limited claim's transaction use generic plans: set_config(…, true) lasts until the commit. */
const GENERIC_PLANS = `set_config('plan_cache_mode', 'force_generic_plan', true)`;

/**
 * The lock a claim of a limited queue holds until it commits (`$1` the environment, `$2` the
 * queue): claims of one queue take turns, so that each counts the executions the one before it
 * committed. A transaction-level advisory lock; two queues whose keys collide only take turns too.
 *
 * It also has the rest of the claim's transaction run its prepared statements on their generic
 * plans (plan_cache_mode, until the commit). The planner prefers a custom plan for
 * CLAIM_LIMITED_SQL, planned again on every call, and planning its CTEs costs several times what
 * running them does once the head spares it the window; the generic plan, made once per
 * connection, reads the same indexes for any queue.
 */
export const LIMITED_QUEUE_LOCK_SQL = `SELECT pg_advisory_xact_lock(${queueLockKey("$1", "$2")}), ${GENERIC_PLANS}`;

/** The advisory lock key of queue `queue` of environment `env` (SQL texts). */
function queueLockKey(env: string, queue: string): string {
  return `hashtextextended(${env} || E'\\n' || ${queue}, 0)`;
}

/**
 * What a claim of a queue with gated runs (runs.gates, migration 0049) takes instead of
 * LIMITED_QUEUE_LOCK_SQL (`$1` the environment, `$2` the queue, `$3` the claim's tasks): the locks
 * of its own queue and of every queue its ready gated runs name in a gate, one after the other in
 * name order (the inner ORDER BY: each lock is taken as its row comes out of the sort), held until
 * it commits. Returns them (`queues`, the claim's `$10`). A claim never waits for a queue's lock
 * while holding another queue's lock that sorts after it, and a claim of a single queue waits
 * holding nothing, so two claims never wait on each other crosswise; NAMED_LIMITS_LOCK_SQL, when
 * taken, comes after every queue lock. It reads the gates of the claim's window (the oldest
 * LIMITED_CLAIM_WINDOW ready runs, as the claim does: a backlog costs it no more than the claim).
 * Gates that ready runs name after this statement read them are not locked: those runs wait for a
 * later claim.
 */
export const GATE_QUEUE_LOCKS_SQL = `SELECT array_agg(l.q) AS queues, ${GENERIC_PLANS} FROM (
       SELECT s.q, pg_advisory_xact_lock(${queueLockKey("$1", "s.q")}) AS locked FROM (
         SELECT $2::text AS q
         UNION
         SELECT g.queue FROM (
           SELECT r.gates FROM runs r
           WHERE r.environment_id = $1 AND r.queue_name = $2 AND NOT r.claim_from_runs
             AND ((r.status = 'QUEUED' AND r.available_at IS NULL) OR (r.status = 'WAITING' AND r.resume_due_at IS NOT NULL))
             AND r.task_identifier = ANY ($3::text[])
           ORDER BY r.created_at, r.id
           LIMIT ${LIMITED_CLAIM_WINDOW}) w CROSS JOIN LATERAL jsonb_to_recordset(w.gates) AS g(queue text)
         WHERE w.gates IS NOT NULL
         ORDER BY 1) s) l`;

/**
 * The lock a limited claim that takes runs holding named concurrency limits holds until it commits,
 * after its queue's (`$1` the environment): such claims of the whole environment take turns, so
 * that each counts the executions of every limit the ones before it committed. Claims of runs
 * without a named limit never take it.
 */
export const NAMED_LIMITS_LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtextextended('concurrency-limits' || E'\\u0001' || $1, 0))`;

/**
 * The ready runs of queue `$2` of environment `$1` a limited claim may take (as `r`; $3 the tasks,
 * $9 whether it holds the named limits' lock; after the CTE `lim`): starts unless the queue is
 * paused, due resumes, and runs holding named limits only with that lock, not a paused limit's starts;
 * gated runs only when the claim holds their gate queues' locks (GATE_READY).
 */
const LIMITED_READY = `r.environment_id = $1 AND r.queue_name = $2 AND NOT r.claim_from_runs
         AND ((r.status = 'QUEUED' AND r.available_at IS NULL AND NOT (SELECT paused FROM lim)) OR (r.status = 'WAITING' AND r.resume_due_at IS NOT NULL))
         AND r.task_identifier = ANY ($3::text[])
         AND (r.concurrency_limits IS NULL OR ($9::boolean AND NOT (r.status = 'QUEUED' AND EXISTS (
           SELECT 1 FROM concurrency_limits c WHERE c.environment_id = $1 AND c.name = ANY (r.concurrency_limits) AND c.paused))))
         AND ${GATE_READY}`;

/** What the limited claim ranks of each ready run `r` (and its tuple id, `tid`: picked finds the run by it): its concurrency key `k`, its rate key `rk` and own rate bound, whether it is a start, its named limits `cl`, its gates. */
const LIMITED_READY_COLUMNS = `r.id, r.ctid AS tid, coalesce(r.concurrency_key, '') AS k, r.created_at, ${RATE_COLUMNS}, r.status = 'QUEUED' AS start, r.concurrency_limits AS cl, r.gates`;

/**
 * The CTEs (after `lim`, `running` and `rate`) that spare a limited claim its window when the first
 * ready runs in queue order already decide it: `room`, how many runs without a concurrency key may
 * still start (`conc`: the limit less their executions); `head`, the first least($4, conc) ready
 * runs, read from runs_limited_ready; `enough`, whether ranking `head` alone picks what ranking
 * the window would. Ranks count only runs before a run, so the head's runs rank alike in both; the
 * window adds a pick only past the head, and no run past it can be picked when
 *   - the head is every ready run (fewer than it asked for), or
 *   - the head's runs all pass (no concurrency key, no named limit, no gate, each start within the
 *     rate bounds that hold it: `head_rate_used`) and fill the claim ($4), or
 *   - runs without a concurrency key fill the free slots `conc` in the head (a later one ranks
 *     past them) and no ready run has a concurrency key: one probe of index
 *     runs_limited_ready_keyed (migration 0054), which holds only ready runs with a key (a keyed
 *     run past the window, which the window would not see, only sends the claim to the window).
 * Otherwise the claim ranks the window (LIMITED_CLAIM_WINDOW runs), as it must for keys.
 */
const LIMITED_READY_HEAD = `room AS (
       SELECT greatest(0, (SELECT n FROM lim) - coalesce((SELECT n FROM running WHERE k = ''), 0)) AS conc),
     head AS (
       SELECT ${LIMITED_READY_COLUMNS} FROM runs r
       WHERE ${LIMITED_READY}
       ORDER BY r.created_at, r.id
       LIMIT (SELECT least($4, conc) FROM room))${rateUsedCte("$1", "$2", "$7", "head_rate_used", "head")},
     enough AS (
       SELECT count(*) < (SELECT least($4, conc) FROM room)
         OR (count(*) = $4 AND NOT bool_or(h.k <> '' OR h.cl IS NOT NULL OR h.gates IS NOT NULL) AND NOT EXISTS (
           SELECT 1 FROM (SELECT s.*, row_number() OVER (PARTITION BY s.rk, s.start ORDER BY s.created_at, s.id) AS rate_rank FROM head s) x
           ${rateUsedJoins("head_rate_used")} WHERE NOT ${RATE_ALLOWS}))
         OR (count(*) FILTER (WHERE h.k = '') = (SELECT conc FROM room) AND NOT EXISTS (
           SELECT 1 FROM runs r WHERE ${LIMITED_READY} AND r.concurrency_key <> '')) AS head
       FROM head h)`;

/**
 * The prepared statement svc_claim_limited, run after LIMITED_QUEUE_LOCK_SQL (or GATE_QUEUE_LOCKS_SQL) in the same
 * transaction (its snapshot, taken after the lock, sees every claim of the queue before it): up to
 * `$4` runs of queue `$2` of environment `$1` (a queue with a concurrencyLimit: NOT
 * claim_from_runs) whose task is one of `$3`, starts and resumes alike, oldest first, as many as
 * the limit leaves free: svc_queue_limit's (an operator's override, else the strictest limit the
 * queue's tasks registered; no starts while the queue is paused, only resumes), counted per concurrency
 * key (each key has its own copy of the limit; runs without one share one), against the queue's
 * EXECUTING runs (offered or leased: a run that waits holds no slot). Indexes runs_limited_ready
 * and runs_limited_executing (migration 0036) hold only these runs. It reads the first ready runs,
 * as many as the limit leaves free (LIMITED_READY_HEAD), and reads and ranks its window of
 * LIMITED_CLAIM_WINDOW only when those do not decide the claim: the same picks either way, the
 * window's cost only for keys, named limits, or a rate that holds the head back. A queue with a rateLimit also
 * starts at most what its rate leaves, per rate key, and so does a run whose trigger gave it its own
 * rate; it records the starts it makes (rate_used, RATE_ALLOWS, rate_taken:
 * engine/runs/rate-limit-sql.ts). $5 worker id, $6 worker version, $7 now,
 * $8 the lease in ms. Constant text.
 *
 * $9: whether the claim holds NAMED_LIMITS_LOCK_SQL too (taken after the queue's lock, always in
 * that order, so two claims never wait on each other crosswise). Only then does it take runs that
 * hold named concurrency limits (runs.concurrency_limits, migration 0048): each such run starts
 * only when, for every limit it holds, the environment's EXECUTING runs holding that limit (of any
 * queue: every claim that takes such runs holds the same lock, so each counts the ones before it)
 * plus the runs this claim ranks before it stay within the limit's `total`, and those of its
 * concurrency key within its `perKey` (a key's live override, else the limit's override, else
 * none). A run whose limit is paused is not started (it stays QUEUED); its resumes go on. A run
 * ranked out by one bound still counts in the others' ranks: the claim may start fewer than a
 * limit allows in one pass, never more.
 *
 * $10: the queues whose locks the claim holds (GATE_QUEUE_LOCKS_SQL; empty after
 * LIMITED_QUEUE_LOCK_SQL). Gates (runs.gates, migration 0049; engine/runs/gate-sql.ts): a gated run
 * is taken only when every gate queue is among them, started only when none is paused, and only
 * when each gate's pool (the gate queue's key) has room under that queue's limit. And every key of
 * this queue counts, besides its own executing runs, the executing runs of any queue gated on it.
 */
export const CLAIM_LIMITED_SQL = `WITH lim AS (
       SELECT l.n, l.paused FROM svc_queue_limit($1, $2) l),
     running AS (
       SELECT coalesce(r.concurrency_key, '') AS k, count(*) AS n FROM runs r
       WHERE r.environment_id = $1 AND r.queue_name = $2 AND r.status = 'EXECUTING' AND NOT r.claim_from_runs
       GROUP BY 1)${rateCte("$1", "$2")},
     ${LIMITED_READY_HEAD},
     ready AS (
       SELECT * FROM head WHERE (SELECT head FROM enough)
       UNION ALL (
       SELECT ${LIMITED_READY_COLUMNS} FROM runs r
       WHERE ${LIMITED_READY} AND NOT (SELECT head FROM enough)
       ORDER BY r.created_at, r.id
       LIMIT ${LIMITED_CLAIM_WINDOW}))${rateUsedCte("$1", "$2", "$7")}${GATE_CTES},
     named AS (
       SELECT ready.id, ready.k, l.name,
         coalesce(ko.per_key, c.per_key_override, c.per_key) AS per_key, coalesce(c.total_override, c.total) AS total,
         row_number() OVER (PARTITION BY l.name, ready.k ORDER BY ready.created_at, ready.id) AS key_rank,
         row_number() OVER (PARTITION BY l.name ORDER BY ready.created_at, ready.id) AS total_rank
       FROM ready CROSS JOIN LATERAL unnest(ready.cl) AS l(name)
       LEFT JOIN concurrency_limits c ON c.environment_id = $1 AND c.name = l.name
       LEFT JOIN concurrency_limit_keys ko ON ko.environment_id = $1 AND ko.name = l.name AND ko.concurrency_key = ready.k AND ko.expires_at > $7),
     named_running AS (
       SELECT l.name, coalesce(r.concurrency_key, '') AS k, count(*) AS n FROM runs r CROSS JOIN LATERAL unnest(r.concurrency_limits) AS l(name)
       WHERE r.environment_id = $1 AND r.status = 'EXECUTING' AND r.concurrency_limits IS NOT NULL AND $9::boolean
       GROUP BY 1, 2),
     named_blocked AS (
       SELECT DISTINCT n.id FROM named n
       WHERE n.key_rank + coalesce((SELECT x.n FROM named_running x WHERE x.name = n.name AND x.k = n.k), 0) > coalesce(n.per_key, 2147483647)
          OR n.total_rank + coalesce((SELECT sum(x.n) FROM named_running x WHERE x.name = n.name), 0) > coalesce(n.total, 2147483647)),
     ranked AS (
       SELECT ready.*, row_number() OVER (PARTITION BY ready.k ORDER BY ready.created_at, ready.id) AS rank,
         row_number() OVER (PARTITION BY ready.rk, ready.start ORDER BY ready.created_at, ready.id) AS rate_rank FROM ready),
     picked AS (
       SELECT r.id, r.status, r.ctid AS tid, x.rk, x.rp FROM runs r JOIN ranked x ON r.ctid = x.tid AND r.id = x.id LEFT JOIN running ON running.k = x.k ${GATED_RUNNING_JOIN} ${rateUsedJoins()}
       WHERE x.rank + coalesce(running.n, 0) + coalesce(gr.n, 0) <= (SELECT n FROM lim) AND ${RATE_ALLOWS}
         AND NOT EXISTS (SELECT 1 FROM named_blocked b WHERE b.id = x.id) AND ${GATES_ALLOW}
         AND ((${startDue("$7")}) OR (${resumeDue}))
       ORDER BY x.created_at, x.id
       LIMIT $4 FOR UPDATE OF r SKIP LOCKED),
     ${claimPicked("$5", "$6", "$7", "$8", rateTakenCte("$1", "$2", "$7"))}`;
