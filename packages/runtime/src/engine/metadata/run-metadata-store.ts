import { withTransaction, type Pool, type Queryable } from "../../db/queryable.ts";
import { NotFoundError, TooLargeError, UnprocessableError, ValidationError } from "../../errors.ts";
import type { Clock } from "../../clock.ts";
import { applyMetadataOperations, collapseMetadataOperations, MAX_METADATA_BYTES, metadataBytes, type MetadataOperation, type RunMetadata } from "./operations.ts";

/** A change of a run's metadata: its own operations (or a whole new object), and its parent's and root run's. */
export interface MetadataChange {
  /** Replaces the metadata when `operations` is not given. */
  metadata?: RunMetadata | undefined;
  operations?: readonly MetadataOperation[] | undefined;
  parentOperations?: readonly MetadataOperation[] | undefined;
  rootOperations?: readonly MetadataOperation[] | undefined;
}

/** How long after a run finished its metadata can still be changed (Trigger.dev's: one hour). */
export const METADATA_UPDATABLE_AFTER_FINISH_MS = 60 * 60 * 1000;

interface LockedRun {
  id: string;
  metadata: RunMetadata | null;
  parent_run_id: string | null;
  root_run_id: string | null;
  finished_at: Date | null;
  metadata_ops_epoch: number | null;
  metadata_ops: number | null;
}

const LOCK_COLUMNS = `id, metadata, parent_run_id, root_run_id, finished_at, metadata_ops_epoch, metadata_ops`;

async function lockRun(tx: Queryable, environmentId: string, runId: string): Promise<LockedRun | undefined> {
  const { rows } = await tx.query<LockedRun>(`SELECT ${LOCK_COLUMNS} FROM runs WHERE id = $1 AND environment_id = $2 FOR UPDATE`, [runId, environmentId]);
  return rows[0];
}

function objectOf(value: unknown): RunMetadata {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as RunMetadata) : {};
}

/** The metadata after `operations`, refused with 413 when it would pass the cap. */
function applyCapped(current: RunMetadata, operations: readonly MetadataOperation[], whose: string): RunMetadata {
  const { metadata } = applyMetadataOperations(current, collapseMetadataOperations(operations));
  const bytes = metadataBytes(metadata);
  if (bytes > MAX_METADATA_BYTES) throw new TooLargeError(`Metadata of ${whose} would be ${bytes} bytes, over the limit of ${MAX_METADATA_BYTES} bytes (256 KiB)`);
  return metadata;
}

/** Writes a run's metadata if it changed (each write is a realtime change: runs_changed stamps change_xid). */
async function writeMetadata(tx: Queryable, environmentId: string, run: LockedRun, metadata: RunMetadata, now: Date, counter?: { epoch: number; ops: number }): Promise<void> {
  const changed = JSON.stringify(metadata) !== JSON.stringify(run.metadata ?? {}) || run.metadata === null;
  if (!changed && !counter) return;
  // The row is locked by this transaction: the guard on id and environment is all it needs.
  await tx.query(
    counter
      ? `UPDATE runs SET metadata = $3::jsonb, updated_at = $4, metadata_ops_epoch = $5, metadata_ops = $6 WHERE id = $1 AND environment_id = $2`
      : `UPDATE runs SET metadata = $3::jsonb, updated_at = $4 WHERE id = $1 AND environment_id = $2`,
    counter ? [run.id, environmentId, JSON.stringify(metadata), now, counter.epoch, counter.ops] : [run.id, environmentId, JSON.stringify(metadata), now],
  );
}

/**
 * Locks the run's parent and root run and computes their metadata after `parentOperations` and
 * `rootOperations` (nothing is written yet: a change over the cap throws first). The run itself is
 * locked before its ancestors, so two changes never wait on each other in a cycle. A run without
 * a parent ignores them, as Trigger.dev does.
 */
async function planAncestors(tx: Queryable, environmentId: string, run: LockedRun, change: MetadataChange): Promise<{ run: LockedRun; metadata: RunMetadata }[]> {
  const targets: [string, readonly MetadataOperation[]][] = [];
  if (run.parent_run_id && change.parentOperations?.length) targets.push([run.parent_run_id, change.parentOperations]);
  if (run.root_run_id && change.rootOperations?.length) {
    // The parent is the root: one change, in order.
    if (targets[0]?.[0] === run.root_run_id) targets[0] = [run.root_run_id, [...targets[0][1], ...change.rootOperations]];
    else targets.push([run.root_run_id, change.rootOperations]);
  }
  const planned: { run: LockedRun; metadata: RunMetadata }[] = [];
  for (const [ancestorId, operations] of targets) {
    const ancestor = await lockRun(tx, environmentId, ancestorId);
    if (ancestor) planned.push({ run: ancestor, metadata: applyCapped(objectOf(ancestor.metadata), operations, `run ${ancestorId}`) });
  }
  return planned;
}

/**
 * `PUT /api/v1/runs/{id}/metadata`: applies `operations` to the run's metadata (or replaces it with
 * `metadata`), and `parentOperations`/`rootOperations` to its parent's and root's, in one
 * transaction. Refused: an unknown run (404), a run that finished more than an hour ago (422),
 * metadata over 256 KiB (413). Returns the run's metadata after the change.
 */
export async function updateRunMetadata(deps: { db: Pool; clock: Clock }, environmentId: string, runId: string, change: MetadataChange): Promise<RunMetadata> {
  if (!change.operations && change.metadata === undefined && !change.parentOperations && !change.rootOperations) {
    throw new ValidationError("Invalid request body: give `metadata` (the new object), `operations`, or `parentOperations`/`rootOperations`");
  }
  const now = deps.clock.now();
  return withTransaction(deps.db, async (tx) => {
    const run = await lockRun(tx, environmentId, runId);
    if (!run) throw new NotFoundError("Task Run not found");
    if (run.finished_at && now.getTime() - run.finished_at.getTime() > METADATA_UPDATABLE_AFTER_FINISH_MS) {
      throw new UnprocessableError("Cannot update metadata for a completed run");
    }
    const current = objectOf(run.metadata);
    // A body with only its ancestors' operations leaves the run's own metadata as it is.
    const own = change.operations !== undefined || change.metadata !== undefined;
    const metadata = change.operations
      ? applyCapped(current, change.operations, `run ${runId}`)
      : change.metadata !== undefined
        ? applyCapped({}, [{ type: "update", value: change.metadata }], `run ${runId}`)
        : current;
    const ancestors = await planAncestors(tx, environmentId, run, change);
    if (own) await writeMetadata(tx, environmentId, run, metadata, now);
    for (const a of ancestors) await writeMetadata(tx, environmentId, a.run, a.metadata, now);
    return metadata;
  });
}

/** `GET /api/v1/runs/{id}/metadata`: the run's metadata ({} when it has none). */
export async function getRunMetadata(db: Queryable, environmentId: string, runId: string): Promise<RunMetadata> {
  const { rows } = await db.query<{ metadata: unknown }>(`SELECT metadata FROM runs WHERE id = $1 AND environment_id = $2`, [runId, environmentId]);
  if (!rows[0]) throw new NotFoundError("Task Run not found");
  return objectOf(rows[0].metadata);
}

/** A metadata operation of task code, numbered in the order the code made it (see RunMetadataBuffer). */
export interface NumberedOperation {
  index: number;
  target: "self" | "parent" | "root";
  op: MetadataOperation;
}

/** What the run's metadata is as an execution starts: the object, and how many of its epoch's operations it has. */
export interface StoredRunMetadata {
  metadata: RunMetadata;
  /** Operations of the execution's ledger epoch already applied (numbered 0 … applied − 1). */
  applied: number;
  /** The run has no parent: `metadata.parent.*` and `metadata.root.*` change the run itself. */
  isRoot: boolean;
}

/** The run's metadata and how many operations of ledger epoch `epoch` it has (a task execution's start). */
export async function loadRunMetadata(db: Queryable, environmentId: string, runId: string, epoch: number): Promise<StoredRunMetadata> {
  const { rows } = await db.query<StoredColumns>(
    `SELECT metadata, metadata_ops_epoch, metadata_ops, parent_run_id FROM runs WHERE id = $1 AND environment_id = $2`,
    [runId, environmentId],
  );
  return storedRunMetadata(rows[0], epoch);
}

type StoredColumns = { metadata: unknown; metadata_ops_epoch: number | null; metadata_ops: number | null; parent_run_id: string | null };

/** The stored metadata of a run as its row has it (a claim returns these columns: no read of its own). */
export function storedRunMetadata(row: StoredColumns | undefined, epoch: number): StoredRunMetadata {
  return { metadata: objectOf(row?.metadata), applied: row && row.metadata_ops_epoch === epoch ? (row.metadata_ops ?? 0) : 0, isRoot: !row?.parent_run_id };
}

export type FlushResult =
  | { kind: "flushed"; metadata: RunMetadata; applied: number }
  /** The operations would take a metadata past 256 KiB: none was applied (they are counted as done). */
  | { kind: "too_large"; metadata: RunMetadata; applied: number; message: string }
  /** The execution no longer holds the run. */
  | { kind: "fenced" };

/**
 * Stores the operations task code made (`metadata.set` … and `metadata.parent/root.*`), fenced by
 * the execution's claim token: those numbered below what the run already has of this ledger epoch
 * are skipped (a replay made them again), the rest are applied to the run, its parent and its root
 * in one transaction, and the run's count moves to `upTo`.
 */
export async function flushRunMetadata(
  deps: { db: Pool; clock: Clock },
  input: { environmentId: string; runId: string; claimToken: string; epoch: number; upTo: number; operations: readonly NumberedOperation[] },
): Promise<FlushResult> {
  const now = deps.clock.now();
  return withTransaction(deps.db, async (tx) => {
    const { rows } = await tx.query<LockedRun>(
      `SELECT ${LOCK_COLUMNS} FROM runs WHERE id = $1 AND environment_id = $2 AND claim_token = $3 AND status = 'EXECUTING' FOR UPDATE`,
      [input.runId, input.environmentId, input.claimToken],
    );
    const run = rows[0];
    if (!run) return { kind: "fenced" } as const;
    const applied = run.metadata_ops_epoch === input.epoch ? (run.metadata_ops ?? 0) : 0;
    const fresh = input.operations.filter((o) => o.index >= applied);
    const of = (target: NumberedOperation["target"]) => fresh.filter((o) => o.target === target).map((o) => o.op);
    const counter = { epoch: input.epoch, ops: Math.max(applied, input.upTo) };
    let metadata: RunMetadata;
    let ancestors: { run: LockedRun; metadata: RunMetadata }[];
    try {
      metadata = applyCapped(objectOf(run.metadata), of("self"), `run ${run.id}`);
      ancestors = await planAncestors(tx, input.environmentId, run, { parentOperations: of("parent"), rootOperations: of("root") });
    } catch (error) {
      if (!(error instanceof TooLargeError)) throw error;
      // Too large: nothing of this flush is applied, but it is counted, so that a replay does not try it again.
      const kept = objectOf(run.metadata);
      await writeMetadata(tx, input.environmentId, run, kept, now, counter);
      return { kind: "too_large", metadata: kept, applied: counter.ops, message: error.message } as const;
    }
    await writeMetadata(tx, input.environmentId, run, metadata, now, counter);
    for (const a of ancestors) await writeMetadata(tx, input.environmentId, a.run, a.metadata, now);
    return { kind: "flushed", metadata, applied: counter.ops } as const;
  });
}
