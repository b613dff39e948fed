// The ambient configuration used by the global functions (runs.list, tasksClient.trigger, …):
// the process environment, then configure(), then the withAuth layers of the current async context.
// withAuth layers live in their own AsyncLocalStorage, separate from the task run context, so a
// scoped override never touches (or loses) the run a call is made from.
import { configFromEnvironment, processEnvironment, resolveConfig, type ClientConfig, type ResolvedConfig } from "./config.ts";

/** Where the withAuth layers of the current async context are kept. */
export interface ScopeStore {
  /** True when overrides are isolated per async context; false for the global-swap fallback. */
  readonly isolated: boolean;
  current(): readonly ClientConfig[];
  run<T>(layers: readonly ClientConfig[], fn: () => Promise<T>): Promise<T>;
}

interface AsyncLocalStorageLike<T> {
  getStore(): T | undefined;
  run<R>(store: T, fn: () => R): R;
}
type AsyncLocalStorageClass = new <T>() => AsyncLocalStorageLike<T>;

/** AsyncLocalStorage from the global object (edge runtimes) or node:async_hooks; undefined if neither. */
export function findAsyncLocalStorage(): AsyncLocalStorageClass | undefined {
  const fromGlobal = (globalThis as { AsyncLocalStorage?: AsyncLocalStorageClass }).AsyncLocalStorage;
  if (typeof fromGlobal === "function") return fromGlobal;
  try {
    const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
    const hooks = proc?.getBuiltinModule?.("node:async_hooks") as { AsyncLocalStorage?: AsyncLocalStorageClass } | undefined;
    return hooks?.AsyncLocalStorage;
  } catch {
    return undefined;
  }
}

/** Per-async-context layers: concurrent withAuth calls never see each other's configuration. */
export function asyncLocalScopeStore(Als: AsyncLocalStorageClass): ScopeStore {
  const storage = new Als<readonly ClientConfig[]>();
  return {
    isolated: true,
    current: () => storage.getStore() ?? [],
    run: (layers, fn) => storage.run(layers, fn),
  };
}

/**
 * Fallback where AsyncLocalStorage does not exist: the layers are swapped globally for the
 * duration of `fn` and restored afterwards (also when it throws). NOT concurrency-safe: calls made
 * by other code while `fn` is awaiting see this override too.
 */
export function globalSwapScopeStore(): ScopeStore {
  let layers: readonly ClientConfig[] = [];
  return {
    isolated: false,
    current: () => layers,
    async run(next, fn) {
      const previous = layers;
      layers = next;
      try {
        return await fn();
      } finally {
        layers = previous;
      }
    },
  };
}

/** The process-wide ambient configuration: configure() plus the scope store for withAuth. */
export class AmbientConfig {
  #global: ClientConfig = {};
  constructor(
    readonly scopes: ScopeStore,
    private readonly environment: () => Record<string, string | undefined> = processEnvironment,
  ) {}

  /** Replaces the global configuration (fields left out fall back to the environment variables). */
  configure(config: ClientConfig): void {
    this.#global = { ...config };
  }

  /** Runs fn with `config` layered over the current configuration, restoring it afterwards. */
  withAuth<T>(config: ClientConfig, fn: () => Promise<T> | T): Promise<T> {
    const layers = [...this.scopes.current(), { ...config }];
    return this.scopes.run(layers, async () => fn());
  }

  /** The configuration a call made right now, in this async context, is sent with. */
  resolve(): ResolvedConfig {
    return resolveConfig(configFromEnvironment(this.environment()), [this.#global, ...this.scopes.current()]);
  }
}

function defaultScopeStore(): ScopeStore {
  const Als = findAsyncLocalStorage();
  return Als ? asyncLocalScopeStore(Als) : globalSwapScopeStore();
}

/** The one ambient configuration of this process, behind configure() and auth.withAuth(). */
export const ambientConfig = new AmbientConfig(defaultScopeStore());
