import { withTransaction, type Pool, type Queryable } from "../../db/queryable.ts";
import { lineBytes, type RunLogLimits, type RunLogLine } from "./limits.ts";

interface Totals {
  run_id: string;
  lines: number;
  bytes: string | number;
  dropped: number;
}

/** What one append kept and dropped, over every run it had lines of. */
export interface AppendedRunLogs {
  stored: number;
  dropped: number;
  /** Runs whose log reached its cap in this append (the note was written). */
  capped: string[];
}

/**
 * Stores lines of any number of runs (a worker's batch), in four statements in one transaction,
 * keeping each run within `limits`: the run's totals are locked (in run id order, so two writers
 * cannot deadlock), the lines that still fit are numbered after the run's last one, and the first
 * line that does not fit is replaced by one note, from svc, that the log was cut there; every
 * later line of the run is dropped (and counted). `lines` are in the order they were logged.
 */
export async function appendRunLogs(pool: Pool, lines: RunLogLine[], limits: RunLogLimits, droppedEarly: DroppedEarly[] = []): Promise<AppendedRunLogs> {
  if (lines.length === 0 && droppedEarly.length === 0) return { stored: 0, dropped: 0, capped: [] };
  return withTransaction(pool, (tx) => appendInTransaction(tx, lines, limits, droppedEarly));
}

/** Lines of a run the writer dropped without sending (far past the cap already): only counted. */
export interface DroppedEarly {
  environmentId: string;
  runId: string;
  count: number;
}

async function appendInTransaction(tx: Queryable, lines: RunLogLine[], limits: RunLogLimits, droppedEarly: DroppedEarly[]): Promise<AppendedRunLogs> {
  const runs = new Map<string, string>();
  for (const line of lines) runs.set(line.runId, line.environmentId);
  for (const early of droppedEarly) runs.set(early.runId, early.environmentId);
  const runIds = [...runs.keys()].sort();
  const envIds = runIds.map((id) => runs.get(id)!);
  await tx.query(
    `INSERT INTO run_log_totals (run_id, environment_id) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (run_id) DO NOTHING`,
    [runIds, envIds],
  );
  const { rows } = await tx.query<Totals>(
    `SELECT t.run_id, t.lines, t.bytes, t.dropped FROM run_log_totals t JOIN unnest($1::text[], $2::text[]) AS r(run_id, environment_id)
       ON t.run_id = r.run_id AND t.environment_id = r.environment_id
     ORDER BY t.run_id FOR UPDATE OF t`,
    [runIds, envIds],
  );
  const totals = new Map(rows.map((r) => [r.run_id, { lines: r.lines, bytes: Number(r.bytes), dropped: r.dropped }]));
  const kept: (RunLogLine & { seq: number })[] = [];
  const capped: string[] = [];
  let dropped = 0;
  for (const line of lines) {
    const total = totals.get(line.runId);
    // A run of another environment than its lines say: nothing of it is written.
    if (!total) continue;
    const bytes = lineBytes(line);
    if (total.dropped === 0 && total.lines < limits.maxLines && total.bytes + bytes <= limits.maxBytes) {
      kept.push({ ...line, seq: ++total.lines });
      total.bytes += bytes;
      continue;
    }
    if (total.dropped === 0) {
      capped.push(line.runId);
      kept.push({ ...capNote(line, limits), seq: ++total.lines });
    }
    total.dropped++;
    dropped++;
  }
  if (kept.length > 0) {
    await tx.query(
      `INSERT INTO run_logs (environment_id, run_id, seq, attempt, level, message, attributes, logged_at, source, step, ledger_epoch, ledger_key)
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[], $6::text[], $7::jsonb[], $8::timestamptz[], $9::text[], $10::text[], $11::int[], $12::text[])`,
      [
        kept.map((l) => l.environmentId),
        kept.map((l) => l.runId),
        kept.map((l) => l.seq),
        kept.map((l) => l.attempt),
        kept.map((l) => l.level),
        kept.map((l) => l.message),
        kept.map((l) => (l.attributes ? JSON.stringify(l.attributes) : null)),
        kept.map((l) => l.loggedAt),
        kept.map((l) => l.source),
        kept.map((l) => l.step),
        kept.map((l) => l.ledger?.epoch ?? null),
        kept.map((l) => l.ledger?.key ?? null),
      ],
    );
  }
  for (const early of droppedEarly) {
    const total = totals.get(early.runId);
    if (!total) continue;
    total.dropped += early.count;
    dropped += early.count;
  }
  const changed = [...totals.entries()];
  await tx.query(
    `UPDATE run_log_totals t SET lines = v.lines, bytes = v.bytes, dropped = v.dropped
     FROM unnest($1::text[], $2::int[], $3::bigint[], $4::int[]) AS v(run_id, lines, bytes, dropped) WHERE t.run_id = v.run_id`,
    [changed.map(([id]) => id), changed.map(([, t]) => t.lines), changed.map(([, t]) => t.bytes), changed.map(([, t]) => t.dropped)],
  );
  return { stored: kept.length - capped.length, dropped, capped };
}

/** The one line that says a run's log was cut, in place of the first line that did not fit. */
function capNote(line: RunLogLine, limits: RunLogLimits): RunLogLine {
  return {
    ...line,
    level: "warn",
    source: "svc",
    message: `svc: this run's log reached its cap (${limits.maxLines} lines or ${limits.maxBytes} bytes per run); later lines are not kept`,
    attributes: { "svc.maxLines": limits.maxLines, "svc.maxBytes": limits.maxBytes },
  };
}
