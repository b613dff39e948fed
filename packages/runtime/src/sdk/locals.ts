import { currentExecution, requireExecution } from "./run-context.ts";

/** A typed key of a run's locals (Trigger.dev's LocalsKey). */
export type LocalsKey<T> = { readonly id: string; readonly __type: symbol; readonly __valueType?: T };

/**
 * Values shared by the hooks and `run` of one execution of a run (a database client a middleware
 * opens, say). Like everything in memory they do not survive a wait: a resumed run starts an
 * execution with empty locals, and `init`/`middleware` run again to set them.
 *
 * @example
 * const DbKey = locals.create<Db>("db");
 * tasks.middleware("db", async ({ next }) => { locals.set(DbKey, await connect()); await next(); });
 * export const report = task({ id: "report", run: async () => locals.getOrThrow(DbKey).query("…") });
 */
export const locals = {
  /** A new key; two keys with one id are still two keys. */
  create<T>(id: string): LocalsKey<T> {
    return { id, __type: Symbol(id) };
  },
  /** The value of the current execution, or undefined (also outside a run). */
  get<T>(key: LocalsKey<T>): T | undefined {
    return currentExecution()?.locals.get(key.__type) as T | undefined;
  },
  getOrThrow<T>(key: LocalsKey<T>): T {
    const value = locals.get(key);
    if (value === undefined) throw new Error(`Local with id ${key.id} not found`);
    return value;
  },
  set<T>(key: LocalsKey<T>, value: T): T {
    requireExecution("locals.set").locals.set(key.__type, value);
    return value;
  },
};
