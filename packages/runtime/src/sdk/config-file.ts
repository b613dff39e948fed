import { existsSync } from "node:fs";
import { join } from "node:path";

/** The names a project's config may have, in the order they are looked for. */
export const CONFIG_FILE_NAMES = ["svc.config.ts", "svc.config.mts", "svc.config.js", "svc.config.mjs"] as const;

/** The project config in `dir` (svc.config.ts, .mts, .js or .mjs), or undefined when there is none. */
export function findConfigFile(dir: string): string | undefined {
  return CONFIG_FILE_NAMES.map((name) => join(dir, name)).find((path) => existsSync(path));
}
