import { retryWrite } from "../db/retry-write.ts";
import { retryWhileUnavailable } from "../db/unavailable.ts";
import type { Queryable } from "../db/queryable.ts";
import { resolveTime } from "../durations.ts";
import type { EngineDeps } from "../engine/deps.ts";
import type { ChannelArrivals } from "../engine/sessions/in-arrivals.ts";
import { appendStreamChunks, MAX_STREAM_CHUNK_BYTES, readStreamChunks } from "../engine/streams/chunks.ts";
import { makeInputWaitpoint } from "../engine/streams/input-waits.ts";
import type { Environment } from "../engine/tenancy/environments.ts";
import { never } from "../sdk/never.ts";
import type { InputWaitOptions, RawInputResult, RunStreamAccess, StreamTarget } from "../sdk/run-context.ts";
import { ChannelOutQueue, type OutRecord } from "./channel-out-queue.ts";
import type { LedgerEntry } from "./entries.ts";
import type { WaitRequest } from "./ledger-store.ts";
import type { LedgerSession } from "./replay.ts";
import { waitResult } from "./wait-results.ts";

type StepKey = { stepKey: string; epoch: number };

/** What run streams use of their execution (DurableExecution's recording and fencing). */
export interface StreamsCore {
  deps: EngineDeps;
  env: Environment;
  runId: string;
  /** The run's parent (null: none; the run itself is then its parent and root). */
  parentRunId: string | null;
  claimToken: string;
  ledger: LedgerSession;
  /** What wakes `.once()` and `.on()`; null: they throw. */
  arrivals: ChannelArrivals | null;
  isFenced(): boolean;
  fence(): void;
  /** Settles when the execution suspends or loses its claim (a waiting once()/on() stops then). */
  ended: Promise<unknown>;
  passes(key: StepKey, entry: LedgerEntry): boolean | Promise<boolean>;
  register(wait: WaitRequest): Promise<unknown>;
  recordStep<T>(key: StepKey, name: string, make: (tx: Queryable) => Promise<T>): Promise<T>;
  replayedStep<T>(key: StepKey, name: string): { value: T } | null;
  /** Writes an error line to the run's log. */
  report(message: string, attributes: Record<string, unknown>): void;
}

/** The chunks the code writes to one stream in an execution: `next` numbers them in call order. */
interface OutState {
  next: number;
  queue: ChannelOutQueue;
}

/** How long `.on()` waits for a notice before it looks at the stream again anyway. */
const ON_POLL_MS = 30_000;

/** What `.peek()` knows of one input stream: the first chunk after the cursor, once loaded. */
interface PeekTail {
  head: { seq: number; data: unknown } | null;
  /** Wakes the tail when the cursor moved past `head` (the code received it). */
  wake: (() => void) | null;
}

/**
 * A run's realtime streams and input streams as its code uses them (`streams.*`).
 *
 * Writes: each chunk's part id is `<run>:<epoch>:<key>:<n>`, n its place among the code's chunks to
 * that stream in this execution, so a replay after a wait (which runs the code again from the
 * start) stores nothing twice; chunks go in order, batched while a send is under way
 * (ChannelOutQueue), fenced by the claim for the run's own streams. Reads of input streams follow
 * a cursor per stream that moves past each chunk the code received: `wait()` (checkpointed: a
 * MANUAL waitpoint that the next chunk completes, the ledger records it), `once()` (keeps the
 * slot; recorded as a step), `on()` (live only, not recorded); `peek()` shows the chunk after the
 * cursor as a live tail has loaded it (not recorded).
 */
export class RunStreams implements RunStreamAccess {
  readonly #out = new Map<string, OutState>();
  readonly #cursors = new Map<string, number>();
  readonly #pipes = new Set<Promise<void>>();
  readonly #peeks = new Map<string, PeekTail>();
  #rootRunId: Promise<string> | null = null;

  constructor(private readonly core: StreamsCore) {}

  async append(key: string, target: StreamTarget, values: unknown[]): Promise<void> {
    if (this.core.isFenced()) return never();
    const records = values.map((value) => {
      const data = JSON.stringify(value ?? null);
      if (Buffer.byteLength(data) > MAX_STREAM_CHUNK_BYTES) throw new Error(`streams: a chunk of "${key}" is over ${MAX_STREAM_CHUNK_BYTES} bytes`);
      return data;
    });
    const out = this.#state(key, target);
    await out.queue.push(records.map((data) => ({ data, index: out.next++ })));
  }

  track(key: string, done: Promise<void>): void {
    // The code sees a failure through the piped stream and waitUntilComplete; the run's log says it too.
    const settled = done
      .catch((error: unknown) => this.core.report(`streams.pipe("${key}") failed`, error instanceof Error ? { name: error.name, message: error.message } : { error }))
      .finally(() => this.#pipes.delete(settled));
    this.#pipes.add(settled);
  }

  /** Resolves once every chunk written so far is stored (before a wait). */
  async flush(): Promise<void> {
    for (const out of this.#out.values()) await out.queue.drain();
  }

  /** Resolves once every pipe has ended and its chunks are stored (before the run ends). */
  async settle(): Promise<void> {
    while (this.#pipes.size > 0) await Promise.all([...this.#pipes]);
    await this.flush();
  }

  async waitForInput(key: string, options?: InputWaitOptions): Promise<RawInputResult> {
    const { core } = this;
    const now = core.deps.clock.now();
    const stepKey = core.ledger.nextKey(options?.idempotencyKey);
    const target = `input:${key}`;
    const entry = core.ledger.lookup(stepKey, "token", target, now);
    if (entry?.resolved) {
      const passes = core.passes(stepKey, entry);
      return passes === true || (await passes) ? this.#received(key, waitResult(entry.outcome)) : never();
    }
    const timeoutAt = options?.timeout === undefined ? null : resolveTime(options.timeout, now, "timeout");
    const afterSeq = this.#cursors.get(key) ?? 0;
    const makeWaitpoint = async (tx: Queryable) => ({
      id: await makeInputWaitpoint(core.deps, tx, { environmentId: core.env.id, runId: core.runId, key, afterSeq, timeoutAt }),
    });
    const outcome = await core.register({ key: stepKey, kind: "token", target, existingWaitpointId: entry?.waitpointId ?? null, options, makeWaitpoint });
    // A token's registration answers with the wait result already made from the outcome.
    return this.#received(key, outcome as ReturnType<typeof waitResult>);
  }

  async onceInput(key: string, timeoutMs: number): Promise<RawInputResult> {
    const { core } = this;
    const stepKey = core.ledger.nextKey();
    const name = `streams.input(${key}).once`;
    const replayed = core.replayedStep<{ chunk?: { seq: number; data: unknown } }>(stepKey, name);
    if (replayed) return this.#onceResult(key, replayed.value);
    const arrivals = this.#arrivals("once");
    const deadline = core.deps.clock.now().getTime() + timeoutMs;
    const afterSeq = this.#cursors.get(key) ?? 0;
    for (;;) {
      // Watching before looking: a chunk sent in between wakes the watch.
      const watch = await arrivals.watch(`${core.runId}/${key}`, afterSeq);
      const [row] = await retryWhileUnavailable(() => readStreamChunks(core.deps.db, core.runId, "in", key, afterSeq, 1));
      const remaining = deadline - core.deps.clock.now().getTime();
      if (row || remaining <= 0) {
        watch.cancel();
        const value = await core.recordStep(stepKey, name, async () => (row ? { chunk: { seq: Number(row.seq), data: JSON.parse(row.data) as unknown } } : {}));
        return this.#onceResult(key, value);
      }
      await Promise.race([watch.wait(remaining), core.ended]);
      if (core.isFenced()) {
        watch.cancel();
        return never();
      }
    }
  }

  onInput(key: string, handler: (data: unknown) => void | Promise<void>, onError: (error: unknown) => void): { off(): void } {
    const { core } = this;
    const arrivals = this.#arrivals("on");
    let stopped = false;
    let stop!: () => void;
    const offCalled = new Promise<void>((resolve) => (stop = resolve));
    let afterSeq = 0;
    void (async () => {
      while (!stopped && !core.isFenced()) {
        const watch = await arrivals.watch(`${core.runId}/${key}`, afterSeq);
        try {
          const rows = await retryWhileUnavailable(() => readStreamChunks(core.deps.db, core.runId, "in", key, afterSeq));
          for (const row of rows) {
            if (stopped || core.isFenced()) return;
            afterSeq = Number(row.seq);
            await handler(JSON.parse(row.data) as unknown);
          }
          // Woken by the next chunk, by off(), or by the execution's end (suspended, finished, fenced).
          if (rows.length === 0) await Promise.race([watch.wait(ON_POLL_MS), core.ended, offCalled]);
        } finally {
          watch.cancel();
        }
      }
    })().catch(onError);
    return {
      off: () => {
        stopped = true;
        stop();
      },
    };
  }

  peekInput(key: string): unknown | undefined {
    const tail = this.#peeks.get(key) ?? this.#startPeekTail(key);
    const head = tail.head;
    return head && head.seq > (this.#cursors.get(key) ?? 0) ? head.data : undefined;
  }

  /**
   * Keeps `head` the first chunk of input stream `key` after the cursor, for as long as the
   * execution goes on: it reads it when a notice says one may have come (or every ON_POLL_MS), and
   * reads the next once the code received it (wait/once moved the cursor past it). Not recorded.
   */
  #startPeekTail(key: string): PeekTail {
    const { core } = this;
    const arrivals = this.#arrivals("peek");
    const tail: PeekTail = { head: null, wake: null };
    this.#peeks.set(key, tail);
    const cursorMoved = () => new Promise<void>((resolve) => (tail.wake = resolve));
    void (async () => {
      while (!core.isFenced()) {
        const after = this.#cursors.get(key) ?? 0;
        if (tail.head && tail.head.seq > after) {
          await Promise.race([cursorMoved(), core.ended]);
          continue;
        }
        const watch = await arrivals.watch(`${core.runId}/${key}`, after);
        try {
          const [row] = await retryWhileUnavailable(() => readStreamChunks(core.deps.db, core.runId, "in", key, after, 1));
          if (row) tail.head = { seq: Number(row.seq), data: JSON.parse(row.data) as unknown };
          else await Promise.race([watch.wait(ON_POLL_MS), core.ended, cursorMoved()]);
        } finally {
          watch.cancel();
        }
      }
    })().catch((error: unknown) => core.report(`streams.input("${key}").peek() stopped`, error instanceof Error ? { name: error.name, message: error.message } : { error }));
    return tail;
  }

  #arrivals(what: string): ChannelArrivals {
    if (!this.core.arrivals) throw new Error(`streams.input().${what}(): this worker does not listen for input stream chunks`);
    return this.core.arrivals;
  }

  #onceResult(key: string, value: { chunk?: { seq: number; data: unknown } }): RawInputResult {
    if (!value.chunk) return { ok: false, error: { name: "WaitpointTimeoutError", code: "TIMED_OUT", message: `streams.input("${key}").once() timed out` } };
    this.#advance(key, value.chunk.seq);
    return { ok: true, output: value.chunk.data };
  }

  /** A wait's result: the chunk's value, the cursor past it. */
  #received(key: string, result: ReturnType<typeof waitResult>): RawInputResult {
    if (!result.ok) return result;
    const chunk = result.output as { seq: number; data: unknown };
    this.#advance(key, chunk.seq);
    return { ok: true, output: chunk.data };
  }

  #advance(key: string, seq: number): void {
    this.#cursors.set(key, Math.max(this.#cursors.get(key) ?? 0, seq));
    this.#peeks.get(key)?.wake?.();
  }

  #state(key: string, target: StreamTarget): OutState {
    const id = `${target}\n${key}`;
    let out = this.#out.get(id);
    if (!out) {
      const state: OutState = { next: 0, queue: null as unknown as ChannelOutQueue };
      state.queue = new ChannelOutQueue((batch) => this.#send(key, target, batch));
      this.#out.set(id, (out = state));
    }
    return out;
  }

  async #send(key: string, target: StreamTarget, records: OutRecord[]): Promise<void> {
    const { core } = this;
    if (core.isFenced()) return never();
    const epoch = core.ledger.epoch;
    const runId = await this.#targetRun(target);
    const inputs = records.map((r) => ({ data: r.data!, partId: `${core.runId}:${epoch}:${target}:${key}:${r.index}` }));
    // The run's own streams are fenced by its claim in the same statement; a parent's or root's by
    // the checks before each send (their claims are not this run's).
    const writer = runId === core.runId ? { claimToken: core.claimToken } : undefined;
    const appended = await retryWrite(() => appendStreamChunks(core.deps, core.env.id, runId, "out", key, inputs, writer));
    if (!appended) {
      core.fence();
      return never();
    }
  }

  #targetRun(target: StreamTarget): Promise<string> {
    const { core } = this;
    if (target === "self") return Promise.resolve(core.runId);
    if (target === "parent") return Promise.resolve(core.parentRunId ?? core.runId);
    this.#rootRunId ??= retryWhileUnavailable(async () => {
      const { rows } = await core.deps.db.query<{ root_run_id: string | null }>(`SELECT root_run_id FROM runs WHERE id = $1 AND environment_id = $2`, [core.runId, core.env.id]);
      return rows[0]?.root_run_id ?? core.runId;
    });
    return this.#rootRunId;
  }
}
