import { basename, relative, sep } from "node:path";
import type { Stats } from "node:fs";
import { watch, type FSWatcher } from "chokidar";

/** A file that, added to a task folder, is a new task file (the worker's rule, a little wider). */
const TASK_FILE = /\.(ts|mts|cts|tsx|js|mjs|cjs|jsx)$/;
const NOT_TASK_FILE = /(\.test\.|\.spec\.|\.d\.ts$)/;
/** Folders of a task folder that never hold task code. */
const SKIPPED_DIRS = new Set(["node_modules", "dist", "build", "coverage", "out"]);

/** What the worker loaded: the files to watch for changes, the folders to watch for new task files. */
export interface WatchedCode {
  files: string[];
  taskDirs: string[];
}

export interface CodeWatcher {
  /**
   * Watches `code` from now on instead of what it watched before; resolves once every file and
   * folder of it is watched.
   */
  watch(code: WatchedCode): Promise<void>;
  close(): Promise<void>;
}

/**
 * Watches the code a worker loaded: a change to any of its files (also one replaced by a rename,
 * as `sed -i` and editors' atomic saves do), and a task file added to (or removed from) a task
 * folder. After a change, once `quietMs` pass without another, calls `onChange` with the changed
 * files, relative to `root`. A file of the project that no task imports changes nothing.
 *
 * chokidar rather than Node's `fs.watch`: `fs.watch` follows a file's inode, so once a save
 * replaces the file, later writes go unseen; chokidar watches the path again when its inode
 * changes, in plain JavaScript (no native addon to build or download).
 */
export function watchCode(root: string, onChange: (files: string[]) => void, options: { quietMs?: number; onError: (error: Error) => void }): CodeWatcher {
  const quietMs = options.quietMs ?? 150;
  const changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let current: FSWatcher | undefined;
  let closed = false;
  /** Calls of watch() take turns: the last one called is the one that stays. */
  let turn: Promise<void> = Promise.resolve();

  const record = (path: string) => {
    changed.add(relative(root, path) || basename(path));
    clearTimeout(timer);
    timer = setTimeout(() => {
      const files = [...changed];
      changed.clear();
      onChange(files);
    }, quietMs);
  };

  return {
    watch(code) {
      turn = turn.then(() => replace(code)).catch((error: unknown) => options.onError(error as Error));
      return turn;
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await turn;
      await current?.close();
    },
  };

  async function replace({ files, taskDirs }: WatchedCode): Promise<void> {
    if (closed) return;
    const graph = new Set(files);
    const inTaskDir = (path: string) => taskDirs.some((dir) => path.startsWith(dir + sep));
    const isTaskFile = (path: string) => inTaskDir(path) && TASK_FILE.test(path) && !NOT_TASK_FILE.test(basename(path));
    const ignored = (path: string, stats?: Stats) => {
      if (graph.has(path) || taskDirs.includes(path)) return false;
      const name = basename(path);
      if (stats?.isDirectory()) return name.startsWith(".") || SKIPPED_DIRS.has(name);
      return stats?.isFile() === true && !isTaskFile(path);
    };
    const next = watch([...files, ...taskDirs], { ignoreInitial: true, ignored, atomic: true });
    next.on("error", (error) => options.onError(error as Error));
    next.on("all", (event, path) => {
      if (next !== current) return;
      if (event === "change" || event === "unlink") {
        if (graph.has(path) || isTaskFile(path)) record(path);
      } else if (event === "add" && isTaskFile(path)) {
        record(path);
      }
    });
    await new Promise<void>((resolve) => next.once("ready", resolve));
    // The new set is watched before the old one stops: no change between the two goes unseen.
    const previous = current;
    current = next;
    if (closed) await next.close();
    await previous?.close();
  }
}
