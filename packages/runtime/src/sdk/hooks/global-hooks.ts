import type {
  AnyOnCancelHookFunction, AnyOnCatchErrorHookFunction, AnyOnCompleteHookFunction, AnyOnFailureHookFunction, AnyOnMiddlewareHookFunction,
  AnyOnResumeHookFunction, AnyOnStartAttemptHookFunction, AnyOnStartHookFunction, AnyOnSuccessHookFunction, AnyOnWaitHookFunction,
} from "./hook-types.ts";

/** The hooks `tasks.onStart(…)` and its siblings register for every task, by kind. */
export interface GlobalHookFunctions {
  start: AnyOnStartHookFunction;
  startAttempt: AnyOnStartAttemptHookFunction;
  success: AnyOnSuccessHookFunction;
  failure: AnyOnFailureHookFunction;
  complete: AnyOnCompleteHookFunction;
  wait: AnyOnWaitHookFunction;
  resume: AnyOnResumeHookFunction;
  catchError: AnyOnCatchErrorHookFunction;
  middleware: AnyOnMiddlewareHookFunction;
  cancel: AnyOnCancelHookFunction;
}
export type GlobalHookKind = keyof GlobalHookFunctions;

type Registry = { [K in GlobalHookKind]: Map<string, GlobalHookFunctions[K]> };

const REGISTRY_KEY = Symbol.for("svc.runtime.global-hooks");

/**
 * The global hooks, shared by every copy of @svc/runtime in the process (as the run context is:
 * run-context.ts). Process-wide on purpose: Trigger.dev's `tasks.onStart(fn)` is called at a task
 * file's top level, with nothing to register it on but the process; the worker serves them to
 * every task it loaded.
 */
function registry(): Registry {
  const global = globalThis as Record<symbol, Registry | undefined>;
  return (global[REGISTRY_KEY] ??= {
    start: new Map(), startAttempt: new Map(), success: new Map(), failure: new Map(), complete: new Map(),
    wait: new Map(), resume: new Map(), catchError: new Map(), middleware: new Map(), cancel: new Map(),
  });
}

/**
 * Registers a global hook. A hook is known by its name, else by its function's source text (as in
 * Trigger.dev): a task file imported twice registers it once. Returns the function that removes it.
 */
export function registerGlobalHook<K extends GlobalHookKind>(kind: K, nameOrFn: string | GlobalHookFunctions[K], fn?: GlobalHookFunctions[K]): () => void {
  const hook = typeof nameOrFn === "string" ? fn : nameOrFn;
  if (typeof hook !== "function") throw new Error(`tasks.${kind}(): a hook function is required`);
  const id = typeof nameOrFn === "string" ? nameOrFn : hook.name || hook.toString();
  const hooks = registry()[kind] as Map<string, GlobalHookFunctions[K]>;
  hooks.set(id, hook);
  return () => {
    if (hooks.get(id) === hook) hooks.delete(id);
  };
}

/** The global hooks of a kind, in the order they were registered. */
export function globalHooksOf<K extends GlobalHookKind>(kind: K): GlobalHookFunctions[K][] {
  return [...(registry()[kind] as Map<string, GlobalHookFunctions[K]>).values()];
}
