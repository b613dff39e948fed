/**
 * Bytes of request bodies held in memory at once, across all requests (packet uploads are read
 * whole before they go to Postgres). A request reserves its declared length before its body is
 * read and gives it back when its response is done.
 */
export class ByteBudget {
  #inUse = 0;

  constructor(readonly capacity: number) {}

  /** Reserves `bytes`; false (nothing reserved) when that would go over capacity. */
  tryTake(bytes: number): boolean {
    if (this.#inUse + bytes > this.capacity) return false;
    this.#inUse += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#inUse -= bytes;
  }

  get inUse(): number {
    return this.#inUse;
  }
}
