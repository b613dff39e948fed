/**
 * Where the current run's context lives: a registered symbol on the global object, so that every
 * copy of @svc/runtime in a process (the worker's, task code's, the HTTP client's) finds the same
 * one. No imports here: the HTTP client reads it on runtimes without node:async_hooks too.
 */
export const RUN_CONTEXT_KEY = Symbol.for("svc.runtime.run-context");

/** The W3C traceparent of the current run attempt's span, when a run is executing with traces on. */
export function currentRunTraceparent(): string | undefined {
  const storage = (globalThis as Record<symbol, { getStore(): { readonly traceparent?: string | undefined } | undefined } | undefined>)[RUN_CONTEXT_KEY];
  return storage?.getStore()?.traceparent;
}
