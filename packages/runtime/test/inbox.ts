/** Values pushed by callbacks, awaited in order: `next()` resolves with the next one (or one already there). */
export function inbox<T>() {
  const items: T[] = [];
  const waiters: ((item: T) => void)[] = [];
  return {
    push(item: T): void {
      const waiter = waiters.shift();
      if (waiter) waiter(item);
      else items.push(item);
    },
    next(): Promise<T> {
      return items.length > 0 ? Promise.resolve(items.shift()!) : new Promise((resolve) => waiters.push(resolve));
    },
    /** How many were pushed and not yet taken. */
    get size(): number {
      return items.length;
    },
  };
}
