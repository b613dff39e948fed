import module, { createRequire } from "node:module";
import { sep } from "node:path";
import { fileURLToPath } from "node:url";

/** What `svc dev`'s worker reports of the code it loaded: what the dev loop watches. */
export interface ModuleGraph {
  /**
   * Every file this process has loaded (ES modules and CommonJS alike), but what sits under a
   * `node_modules` folder: the project's task files, what they import, svc.config.ts.
   */
  files(): string[];
  /** False where this Node has no `module.registerHooks` (before 22.15): ES modules are then not seen. */
  readonly seesEsModules: boolean;
}

const inDependencies = (path: string) => path.split(sep).includes("node_modules");

/**
 * Starts recording the modules this process loads. Call it before the code to be recorded is
 * imported. ES modules are seen through a synchronous load hook (it passes every load on
 * unchanged, also through tsx's hooks); CommonJS modules are read from `require.cache`, where
 * tsx's CommonJS loader puts them too.
 */
export function recordModuleGraph(): ModuleGraph {
  const esModules = new Set<string>();
  const seesEsModules = typeof module.registerHooks === "function";
  if (seesEsModules) {
    module.registerHooks({
      load(url, context, nextLoad) {
        if (url.startsWith("file:")) esModules.add(url);
        return nextLoad(url, context);
      },
    });
  }
  const require = createRequire(import.meta.url);
  return {
    seesEsModules,
    files() {
      const paths = new Set<string>(Object.keys(require.cache));
      for (const url of esModules) paths.add(fileURLToPath(url));
      return [...paths].filter((path) => !inDependencies(path)).sort();
    },
  };
}
