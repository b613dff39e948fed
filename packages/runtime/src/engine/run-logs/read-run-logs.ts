import type { Queryable } from "../../db/queryable.ts";
import type { RunLogLevel, RunLogLine, RunLogSource } from "./limits.ts";

/** One stored line of a run's log, as readers (the dashboard, the trace) see it: as written, numbered. */
export type RunLog = Omit<RunLogLine, "environmentId" | "runId"> & { seq: number };

export interface RunLogs {
  /** In the order they were written. */
  lines: RunLog[];
  /** Lines dropped past the run's cap (the log says where, in a line from svc). */
  dropped: number;
}

interface Row {
  seq: number;
  attempt: number;
  level: RunLogLevel;
  message: string;
  attributes: Record<string, unknown> | null;
  logged_at: Date;
  source: RunLogSource;
  step: string | null;
  ledger_epoch: number | null;
  ledger_key: string | null;
}

/** A run's stored log lines (at most `limit`, from the first), in the environment. */
export async function readRunLogs(db: Queryable, environmentId: string, runId: string, limit: number): Promise<RunLogs> {
  const [lines, totals] = await Promise.all([
    db.query<Row>(
      `SELECT seq, attempt, level, message, attributes, logged_at, source, step, ledger_epoch, ledger_key
       FROM run_logs WHERE run_id = $1 AND environment_id = $2 ORDER BY seq LIMIT $3`,
      [runId, environmentId, limit],
    ),
    db.query<{ dropped: number }>(`SELECT dropped FROM run_log_totals WHERE run_id = $1 AND environment_id = $2`, [runId, environmentId]),
  ]);
  return {
    lines: lines.rows.map((r) => ({
      seq: r.seq,
      attempt: r.attempt,
      level: r.level,
      message: r.message,
      attributes: r.attributes,
      loggedAt: r.logged_at,
      source: r.source,
      step: r.step,
      ledger: r.ledger_epoch !== null && r.ledger_key !== null ? { epoch: r.ledger_epoch, key: r.ledger_key } : null,
    })),
    dropped: totals.rows[0]?.dropped ?? 0,
  };
}
