/**
 * A promise that never settles, new on every call. Code awaiting it is abandoned and garbage
 * collected with everything it holds; a single shared never-settling promise would instead keep
 * every awaiting frame reachable through its reaction list (one leak per suspended run).
 */
export function never<T = never>(): Promise<T> {
  return new Promise<T>(() => {});
}
