import { readdirSync, statSync, watch, type FSWatcher } from "node:fs";
import { join, relative, sep } from "node:path";

const CODE = /\.(ts|mts|cts|tsx|js|mjs|cjs|jsx|json)$/;
/** Folders that never hold task code: dependencies, build output, svc's own state, dot-folders. */
const SKIPPED_DIRS = new Set(["node_modules", "dist", "build", "coverage", "out"]);
const skipped = (name: string) => name.startsWith(".") || SKIPPED_DIRS.has(name);

export interface ProjectWatcher {
  close(): void;
}

/**
 * Watches a project's code: the files at its root and every folder below it but dependencies,
 * build output and dot-folders (`.svc`, `.git`), folders made while it runs included. After a change, once `quietMs` pass without
 * another, calls `onChange` with the changed files (relative to `root`).
 */
export function watchProject(
  root: string,
  onChange: (files: string[]) => void,
  options: { quietMs?: number; onError: (error: Error) => void; onFolderWatched?: (name: string) => void },
): ProjectWatcher {
  const quietMs = options.quietMs ?? 150;
  const changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  const record = (path: string) => {
    const rel = relative(root, path);
    if (!CODE.test(rel) || rel.split(sep).some(skipped)) return;
    changed.add(rel);
    clearTimeout(timer);
    timer = setTimeout(() => {
      const files = [...changed];
      changed.clear();
      onChange(files);
    }, quietMs);
  };
  const watchers: FSWatcher[] = [];
  const watchedDirs = new Set<string>();
  const add = (dir: string, recursive: boolean, onEvent: (name: string) => void) => {
    const watcher = watch(dir, { recursive }, (_event, name) => {
      if (name) onEvent(name.toString());
    });
    watcher.on("error", options.onError);
    watchers.push(watcher);
  };
  const addFolder = (name: string) => {
    if (skipped(name) || watchedDirs.has(name)) return;
    watchedDirs.add(name);
    add(join(root, name), true, (inner) => record(join(root, name, inner)));
    options.onFolderWatched?.(name);
  };
  // The root itself, not recursively (node_modules is there): its files, and folders made later.
  add(root, false, (name) => {
    if (statSync(join(root, name), { throwIfNoEntry: false })?.isDirectory()) addFolder(name);
    else record(join(root, name));
  });
  for (const entry of readdirSync(root, { withFileTypes: true })) if (entry.isDirectory()) addFolder(entry.name);
  return {
    close() {
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
    },
  };
}
