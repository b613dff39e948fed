/**
 * Groups calls made in the same event-loop turn into one batch call (one SQL statement instead of
 * one per run). `run` must return one result per item, in order.
 */
export class MicroBatcher<I, O> {
  readonly #run: (items: I[]) => Promise<O[]>;
  readonly #max: number;
  #pending: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  #scheduled = false;

  readonly #defer: (fn: () => void) => void;

  /**
   * `flush: "microtask"` groups calls made by one synchronous loop with no added latency;
   * `"immediate"` (default) also groups calls from separate continuations of the same turn.
   */
  constructor(run: (items: I[]) => Promise<O[]>, max = 500, flush: "microtask" | "immediate" = "immediate") {
    this.#run = run;
    this.#max = max;
    this.#defer = flush === "microtask" ? queueMicrotask : (fn) => setImmediate(fn);
  }

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (this.#pending.length >= this.#max) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        this.#defer(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return;
    this.#run(batch.map((p) => p.item)).then(
      (results) => batch.forEach((p, i) => p.resolve(results[i]!)),
      (error) => batch.forEach((p) => p.reject(error)),
    );
  }
}
