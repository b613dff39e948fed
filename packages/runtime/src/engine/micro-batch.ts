/**
 * Groups calls made in the same event-loop turn into one batch call (one SQL statement instead of
 * one per run). `run` must return one result per item, in order.
 *
 * With `maxInFlight`, at most that many batch calls run at once: calls made while they do wait and
 * go together in the next one, as a database's group commit does. An idle batcher adds no delay
 * (its first call goes at the end of the turn); a busy one makes fewer, larger batches (one
 * statement and one commit for many runs) instead of one small batch per turn.
 */
export class MicroBatcher<I, O> {
  readonly #run: (items: I[]) => Promise<O[]>;
  readonly #max: number;
  readonly #maxInFlight: number;
  #pending: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  #scheduled = false;
  #inFlight = 0;

  readonly #defer: (fn: () => void) => void;

  /**
   * `flush: "microtask"` groups calls made by one synchronous loop with no added latency;
   * `"immediate"` (default) also groups calls from separate continuations of the same turn.
   */
  constructor(run: (items: I[]) => Promise<O[]>, max = 500, flush: "microtask" | "immediate" = "immediate", options: { maxInFlight?: number } = {}) {
    this.#run = run;
    this.#max = max;
    this.#maxInFlight = options.maxInFlight ?? Infinity;
    this.#defer = flush === "microtask" ? queueMicrotask : (fn) => setImmediate(fn);
  }

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (this.#pending.length >= this.#max && this.#inFlight < this.#maxInFlight) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        this.#defer(() => {
          this.#scheduled = false;
          // Busy: the batch call under way takes these with it when it ends.
          if (this.#inFlight < this.#maxInFlight) this.#flush();
        });
      }
    });
  }

  #flush(): void {
    const batch = this.#pending.splice(0, this.#max);
    if (batch.length === 0) return;
    this.#inFlight++;
    this.#run(batch.map((p) => p.item))
      .then(
        (results) => batch.forEach((p, i) => p.resolve(results[i]!)),
        (error) => batch.forEach((p) => p.reject(error)),
      )
      .finally(() => {
        this.#inFlight--;
        if (this.#pending.length > 0 && !this.#scheduled && this.#inFlight < this.#maxInFlight) this.#flush();
      });
  }
}
