import { appendRunLogs, boundLine, DEFAULT_RUN_LOG_LIMITS, type AppendedRunLogs, type DroppedEarly, type Pool, type RunLogLimits, type RunLogLine } from "@svc/runtime/engine";
import type { TaskLogRecord, TaskLogSink } from "@svc/runtime/sdk";

/** How the worker stores what runs log (WorkerOptions.runLogs). */
export interface RunLogWriterOptions extends Partial<RunLogLimits> {
  /** How long a line may wait in memory before its batch is written (a run's end writes at once). @default 200 */
  flushMs?: number;
  /** A batch is written as soon as it has this many lines. @default 500 */
  maxBatch?: number;
  /** Lines held in memory at most while writes are slow; later ones are dropped (and reported). @default 20000 */
  maxBuffered?: number;
}

export interface RunLogWriterDeps {
  db: Pool;
  environmentId: string;
}

/** Who hears what the writer did (the worker: its runLogsWritten event, its error reporting). */
export interface RunLogListener {
  /** Told of each written batch. */
  written(result: AppendedRunLogs & { runIds: string[] }): void;
  report(error: unknown, where: string): void;
}

/**
 * Stores what task code logs with its run (run_logs), off the run's hot path: lines are buffered
 * and written in batches of every run's lines together (one transaction, four statements), every
 * `flushMs`, when `maxBatch` lines wait, and when an execution ends (the worker calls runEnded
 * once the run's end is written, so the end itself never waits for its log). One batch is written
 * at a time, so a run's lines are stored in the order they were logged.
 *
 * Not stored: lines a resumed run logs again while it replays (they were stored when first
 * logged) and svc's replay notices (said once per worker, they belong to no one run). Each run's
 * cap is kept by the database (appendRunLogs); lines far past it are not even buffered.
 */
export class RunLogWriter implements TaskLogSink {
  readonly #deps: RunLogWriterDeps;
  readonly #limits: RunLogLimits;
  readonly #flushMs: number;
  readonly #maxBatch: number;
  readonly #maxBuffered: number;
  #buffer: RunLogLine[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** The batch being written, and those queued behind it. */
  #writing: Promise<void> = Promise.resolve();
  /** Lines buffered per run by this writer: a run past its cap here is past it in the database. */
  readonly #seen = new Map<string, number>();
  /** Lines not buffered because their run was far past its cap: counted in its totals with the next batch. */
  #droppedEarly = new Map<string, number>();
  #overflowReported = false;
  #listener: RunLogListener = { written: () => {}, report: (error) => console.error("run logs:", error) };

  constructor(deps: RunLogWriterDeps, options: RunLogWriterOptions = {}) {
    this.#deps = deps;
    this.#limits = {
      maxLines: options.maxLines ?? DEFAULT_RUN_LOG_LIMITS.maxLines,
      maxBytes: options.maxBytes ?? DEFAULT_RUN_LOG_LIMITS.maxBytes,
      maxLineBytes: options.maxLineBytes ?? DEFAULT_RUN_LOG_LIMITS.maxLineBytes,
    };
    this.#flushMs = options.flushMs ?? 200;
    this.#maxBatch = options.maxBatch ?? 500;
    this.#maxBuffered = options.maxBuffered ?? 20_000;
  }

  /** Sets who hears of written batches and errors (the worker, once its events exist). */
  listen(listener: RunLogListener): void {
    this.#listener = listener;
  }

  get limits(): RunLogLimits {
    return this.#limits;
  }

  write(record: TaskLogRecord): void {
    if (record.replayed || record.notice || !record.run.id) return;
    const seen = (this.#seen.get(record.run.id) ?? 0) + 1;
    this.#seen.set(record.run.id, seen);
    // One past the cap still goes: it is the line the database replaces by the cap's note.
    if (seen > this.#limits.maxLines + 1) {
      this.#droppedEarly.set(record.run.id, (this.#droppedEarly.get(record.run.id) ?? 0) + 1);
      return;
    }
    if (this.#buffer.length >= this.#maxBuffered) {
      if (!this.#overflowReported) {
        this.#overflowReported = true;
        this.#listener.report(new Error(`run logs: ${this.#maxBuffered} lines wait to be written; later lines are dropped until the database catches up`), "run logs");
      }
      return;
    }
    this.#buffer.push(
      boundLine(
        {
          environmentId: this.#deps.environmentId,
          runId: record.run.id,
          attempt: record.run.attempt,
          level: record.level,
          message: record.message,
          attributes: record.attributes ?? null,
          loggedAt: record.at,
          source: record.source ?? "logger",
          step: record.step ?? null,
          ledger: record.ledger ? { epoch: record.ledger.epoch, key: record.ledger.stepKey } : null,
        },
        this.#limits,
      ),
    );
    if (this.#buffer.length >= this.#maxBatch) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), this.#flushMs).unref();
  }

  /** An execution of the run ended (finished, suspended, retried, abandoned): its lines are written now. */
  runEnded(runId: string): Promise<void> {
    this.#seen.delete(runId);
    return this.flush();
  }

  /** Writes what is buffered; resolves once it (and every batch before it) is written. */
  flush(): Promise<void> {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#buffer.length === 0 && this.#droppedEarly.size === 0) return this.#writing;
    const batch = this.#buffer;
    const droppedEarly = [...this.#droppedEarly].map(([runId, count]) => ({ environmentId: this.#deps.environmentId, runId, count }));
    this.#buffer = [];
    this.#droppedEarly = new Map();
    this.#writing = this.#writing.then(() => this.#append(batch, droppedEarly));
    return this.#writing;
  }

  async #append(batch: RunLogLine[], droppedEarly: DroppedEarly[]): Promise<void> {
    try {
      const result = await appendRunLogs(this.#deps.db, batch, this.#limits, droppedEarly);
      this.#overflowReported = false;
      this.#listener.written({ ...result, runIds: [...new Set([...batch.map((l) => l.runId), ...droppedEarly.map((d) => d.runId)])] });
    } catch (error) {
      // The lines are lost (the run is not: its log is not part of its state); said, not swallowed.
      this.#listener.report(error, "run logs");
    }
  }
}
