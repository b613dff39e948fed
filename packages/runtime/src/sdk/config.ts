/** The project config a worker reads (svc.config.ts, like trigger.config.ts). */
export interface SvcConfig {
  /** Folders, relative to the config file, whose .ts/.js files export tasks. */
  dirs: string[];
}

/**
 * Typed helper for svc.config.ts.
 *
 * @example
 * // svc.config.ts
 * import { defineConfig } from "@svc/runtime";
 * export default defineConfig({ dirs: ["./src/tasks"] });
 */
export function defineConfig(config: SvcConfig): SvcConfig {
  return config;
}
