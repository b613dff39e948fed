/**
 * Lets a worker that runs as compiled JavaScript import task files written in TypeScript, through
 * tsx's loader hooks (ESM and CommonJS): no build step for the user's tasks, and TypeScript that
 * Node's own type stripping refuses (enums, parameter properties, imports without extensions,
 * tsconfig paths) works. From source the worker already runs under tsx, so nothing is registered.
 */
export async function registerTypeScriptLoader(): Promise<void> {
  if (import.meta.url.endsWith(".ts")) return;
  const [esm, cjs] = await Promise.all([import("tsx/esm/api"), import("tsx/cjs/api")]);
  esm.register();
  cjs.register();
}
