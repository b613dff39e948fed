import { preparedText, type Queryable } from "../../db/queryable.ts";
import { presentedStatusSql } from "../runs/pending-version.ts";
import type { RunStatus } from "../runs/statuses.ts";

/**
 * What a realtime subscription follows: one run, the runs of a batch, or the newest runs of the
 * environment carrying every one of `tags` (none: every run) created after `createdAfter`.
 */
export type RunShape =
  | { kind: "run"; runId: string }
  | { kind: "batch"; batchId: string }
  | { kind: "tags"; tags: string[]; createdAfter: Date };

/** A tag shape follows at most this many runs: the newest of its window. */
export const MAX_TAG_SHAPE_RUNS = 1000;

/** The columns of a run a subscriber sees (migration 0038 stamps change_xid when one of them changes); `status` as presented. */
export interface RealtimeRunRow {
  id: string;
  task_identifier: string;
  status: RunStatus;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  delay_until: Date | null;
  expired_at: Date | null;
  finished_at: Date | null;
  idempotency_key: string | null;
  idempotency_key_user: string | null;
  is_test: boolean;
  ttl: string | null;
  payload: string | null;
  payload_type: string;
  metadata: unknown;
  output: string | null;
  output_type: string | null;
  tags: string[];
  error: unknown;
  batch_id: string | null;
  /** The run's realtime (`out`) stream keys, in the order they were first written; null: none. */
  realtime_streams: string[] | null;
}

export interface ShapeRead {
  /** The snapshot the rows were read under (`pg_snapshot` text): the next read's `since`. */
  snapshot: string;
  /** Rows of the shape changed since `since` (all of them when `since` is null). */
  rows: RealtimeRunRow[];
  /** `since` is ahead of the database (a snapshot of another cluster, or restored from before it): start over. */
  sinceAhead: boolean;
}

/**
 * The status is the presented one (pending-version.ts). A run that turns from PENDING_VERSION to
 * QUEUED because a worker registered its task is not a change of the row: subscribers see it when
 * the run is claimed (EXECUTING).
 */
const COLUMNS = `r.id, r.task_identifier, ${presentedStatusSql("r")} AS status, r.created_at, r.updated_at, r.started_at, r.delay_until, r.expired_at, r.finished_at,
  r.idempotency_key, r.idempotency_key_user, r.is_test, r.ttl, r.payload, r.payload_type, r.metadata, r.output, r.output_type,
  r.tags, r.error, r.batch_id, r.realtime_streams`;

/**
 * A row changed since snapshot $since when the snapshot did not see the transaction that last
 * changed it (change_xid, migration 0038); NULL (a row older than the migration) was seen.
 * With $since NULL every row of the shape is returned.
 */
const CHANGED = `($since::pg_snapshot IS NULL OR (r.change_xid IS NOT NULL AND NOT pg_visible_in_snapshot(r.change_xid, $since::pg_snapshot)))`;

/**
 * The read and the snapshot come from one statement, so they agree: what the rows do not show
 * yet, the snapshot did not see either, and the next read (from it) returns.
 */
function shapeStatement(rowsSql: string): string {
  return `WITH s AS (SELECT pg_current_snapshot() AS snap)
    SELECT s.snap::text AS snapshot,
      ($since::pg_snapshot IS NOT NULL AND pg_snapshot_xmax($since::pg_snapshot) > pg_snapshot_xmax(s.snap)) AS since_ahead,
      r.*
    FROM s LEFT JOIN LATERAL (${rowsSql}) r ON true`;
}

const RUN_SQL = shapeStatement(`SELECT ${COLUMNS} FROM runs r WHERE r.id = $1 AND r.environment_id = $env AND ${CHANGED}`);
const BATCH_SQL = shapeStatement(`SELECT ${COLUMNS} FROM runs r WHERE r.batch_id = $1 AND r.environment_id = $env AND ${CHANGED} ORDER BY r.batch_index`);
// One tag's lane of run_tags (migration 0032) finds the window's runs newest first; the others
// are checked on the run. Changes are looked for among the newest MAX_TAG_SHAPE_RUNS only, as the
// first read returned them, so a read costs the same whatever the history holds.
const TAGS_SQL = shapeStatement(
  `SELECT * FROM (
     SELECT ${COLUMNS}, r.change_xid FROM run_tags t JOIN runs r ON r.id = t.run_id
     WHERE t.environment_id = $env AND t.tag = $1 AND t.created_at > $2 AND r.environment_id = $env AND r.tags @> $3::text[]
     ORDER BY t.created_at DESC, t.run_id DESC LIMIT ${MAX_TAG_SHAPE_RUNS}) r
   WHERE ${CHANGED}`,
);
const ALL_SQL = shapeStatement(
  `SELECT * FROM (
     SELECT ${COLUMNS}, r.change_xid FROM runs r WHERE r.environment_id = $env AND r.created_at > $1
     ORDER BY r.created_at DESC, r.id DESC LIMIT ${MAX_TAG_SHAPE_RUNS}) r
   WHERE ${CHANGED}`,
);

/** Numbers the named placeholders: $1..$3 are the shape's, $env and $since come after. */
function numbered(sql: string, shapeValues: number): string {
  return sql.replaceAll("$env", `$${shapeValues + 1}`).replaceAll("$since", `$${shapeValues + 2}`);
}

function statementFor(shape: RunShape): { text: string; values: unknown[] } {
  switch (shape.kind) {
    case "run":
      return { text: numbered(RUN_SQL, 1), values: [shape.runId] };
    case "batch":
      return { text: numbered(BATCH_SQL, 1), values: [shape.batchId] };
    case "tags":
      return shape.tags.length > 0
        ? { text: numbered(TAGS_SQL, 3), values: [shape.tags[0], shape.createdAfter, shape.tags] }
        : { text: numbered(ALL_SQL, 1), values: [shape.createdAfter] };
  }
}

type Row = Partial<RealtimeRunRow> & { snapshot: string; since_ahead: boolean; change_xid?: string };

/**
 * Reads a shape's rows changed since snapshot `since` (null: all of them), with the snapshot they
 * were read under. `since` must be a valid `pg_snapshot` text (the caller checked its form).
 */
export async function readRunShape(db: Queryable, environmentId: string, shape: RunShape, since: string | null): Promise<ShapeRead> {
  const { text, values } = statementFor(shape);
  const { rows } = await db.query<Row>(preparedText(text, [...values, environmentId, since]));
  const first = rows[0]!;
  const found = rows.filter((r) => r.id !== null && r.id !== undefined);
  return {
    snapshot: first.snapshot,
    sinceAhead: first.since_ahead,
    rows: found.map(({ snapshot: _s, since_ahead: _a, change_xid: _x, ...row }) => row as RealtimeRunRow),
  };
}

/** Whether every transaction with an id below `horizon` (a `pg_snapshot_xmax` text) has ended. */
export async function transactionsEndedBelow(db: Queryable, horizon: string): Promise<boolean> {
  const { rows } = await db.query<{ ended: boolean }>(preparedText(`SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8 AS ended`, [horizon]));
  return rows[0]!.ended;
}
