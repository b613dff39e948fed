import { createHash } from "node:crypto";
import { readdir, readFile, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { isConcurrencyLimit, isQueue, isTask, type ConcurrencyLimit, type Queue, type SvcConfig, type Task } from "@svc/runtime/sdk";


const TASK_FILE = /\.(ts|mts|js|mjs)$/;
const SKIPPED = /(\.test\.|\.spec\.|\.d\.ts$)/;

async function filesIn(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== "node_modules") files.push(...(await filesIn(path)));
    else if (entry.isFile() && TASK_FILE.test(entry.name) && !SKIPPED.test(entry.name)) files.push(path);
  }
  return files;
}

/**
 * A module's default export. A TypeScript file in a CommonJS package (no "type": "module") is
 * compiled to CommonJS, whose exports object arrives as the default, with its own `default` inside.
 */
function defaultExport(module: Record<string, unknown>): unknown {
  const value = module.default as Record<string, unknown> | undefined;
  return value && typeof value === "object" && "default" in value && !("dirs" in value) ? value.default : value;
}

/** A module's exported values; for a CommonJS module, also those of its exports object. */
function exportedValues(module: Record<string, unknown>): unknown[] {
  const values = Object.values(module);
  const inner = module.default;
  if (inner && typeof inner === "object" && !isTask(inner)) values.push(...Object.values(inner));
  return values;
}

export interface LoadedTasks {
  tasks: Task[];
  /** Content hash of the task files: the worker version runs record. */
  version: string;
  files: string[];
  /** The task folders svc.config names, absolute: a file added there is a new task file. */
  dirs: string[];
}

/**
 * Loads the config file, imports every task file in its `dirs` (TypeScript runs without a build
 * step: from source the worker runs under tsx, built it registers tsx, see typescript-loader.ts) and collects exported tasks. Duplicate ids are an error.
 */
export async function loadTasks(configPath: string): Promise<LoadedTasks> {
  const absolute = resolve(configPath);
  const config = defaultExport(await import(pathToFileURL(absolute).href)) as SvcConfig;
  if (!config || !Array.isArray(config.dirs) || config.dirs.length === 0) {
    throw new Error(`${configPath}: the default export must be { dirs: ["./path/to/tasks"] }`);
  }
  const base = dirname(absolute);
  const files: string[] = [];
  const dirs = config.dirs.map((dir) => resolve(base, dir));
  for (const [i, path] of dirs.entries()) {
    if (!(await stat(path).catch(() => null))?.isDirectory()) throw new Error(`${configPath}: task folder ${config.dirs[i]} does not exist`);
    files.push(...(await filesIn(path)));
  }
  const hash = createHash("sha256");
  const byId = new Map<string, { task: Task; file: string }>();
  const queues = new Map<string, { queue: Queue; file: string }>();
  const limits = new Map<string, { limit: ConcurrencyLimit; file: string }>();
  for (const file of files) {
    hash.update(file).update(await readFile(file));
    const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    for (const value of exportedValues(module)) {
      if (isQueue(value)) {
        const existing = queues.get(value.name);
        if (existing && (existing.queue.concurrencyLimit !== value.concurrencyLimit || JSON.stringify(existing.queue.rateLimit) !== JSON.stringify(value.rateLimit))) {
          throw new Error(`queue "${value.name}" is declared with two limits, in ${existing.file} and ${file}`);
        }
        queues.set(value.name, { queue: value, file });
        continue;
      }
      if (isConcurrencyLimit(value)) {
        const existing = limits.get(value.name);
        if (existing && !sameBounds(existing.limit, value)) {
          throw new Error(`concurrency limit "${value.name}" is declared with two sets of bounds, in ${existing.file} and ${file}`);
        }
        limits.set(value.name, { limit: value, file });
        continue;
      }
      if (!isTask(value)) continue;
      const existing = byId.get(value.id);
      if (existing && existing.task !== value) throw new Error(`duplicate task id "${value.id}" in ${existing.file} and ${file}`);
      byId.set(value.id, { task: value, file });
    }
  }
  const loaded = withDeclaredLimits([...byId.values()], limits).map((task) => withDeclaredQueue(task, queues));
  return { tasks: loaded, version: hash.digest("hex").slice(0, 12), files, dirs };
}

/**
 * A task that names its queue (`queue: "emails"`) gets the limits of the queue declared with that
 * name by `queue()` in an exported value of a task file, as in Trigger.dev: its concurrencyLimit
 * and its rateLimit, each unless the task declares its own.
 */
function withDeclaredQueue(task: Task, queues: Map<string, { queue: Queue }>): Task {
  const declared = task.queue?.name ? queues.get(task.queue.name)?.queue : undefined;
  if (!declared) return task;
  const concurrencyLimit = task.queue?.concurrencyLimit ?? declared.concurrencyLimit;
  const rateLimit = task.queue?.rateLimit ?? declared.rateLimit;
  if (concurrencyLimit === task.queue?.concurrencyLimit && rateLimit === task.queue?.rateLimit) return task;
  return {
    ...task,
    queue: { name: declared.name, ...(concurrencyLimit !== undefined ? { concurrencyLimit } : {}), ...(rateLimit !== undefined ? { rateLimit } : {}) },
  };
}


function sameBounds(a: { perKey?: number; total?: number }, b: { perKey?: number; total?: number }): boolean {
  return a.perKey === b.perKey && a.total === b.total;
}

/**
 * Each task's named concurrency limits with the bounds the worker's code declares for them: a limit
 * a task names by its name gets those of the `concurrencyLimit()` of that name exported from a task
 * file (as Trigger.dev's resource catalog resolves it), a limit a task passes as an object its own.
 * One limit declared with two sets of bounds in one worker's code is an error naming the task (two
 * workers may differ: the strictest holds, engine/concurrency-limits/declared-limits.ts).
 */
function withDeclaredLimits(entries: { task: Task; file: string }[], exported: Map<string, { limit: ConcurrencyLimit; file: string }>): Task[] {
  const seen = new Map<string, { bounds: { perKey?: number; total?: number }; where: string }>();
  for (const [name, { limit, file }] of exported) seen.set(name, { bounds: limit, where: file });
  const tasks: Task[] = [];
  for (const { task, file } of entries) {
    if (!task.concurrency) {
      tasks.push(task);
      continue;
    }
    const limits = task.concurrency.limits.map((limit) => {
      const known = seen.get(limit.name);
      if (!limit.bounds) return known ? { name: limit.name, bounds: { ...pick(known.bounds) } } : limit;
      if (known && !sameBounds(known.bounds, limit.bounds)) {
        throw new Error(`task("${task.id}") in ${file}: concurrency limit "${limit.name}" is declared with other bounds (${describe(limit.bounds)}) than in ${known.where} (${describe(known.bounds)}); declare it once with concurrencyLimit() and share it`);
      }
      if (!known) seen.set(limit.name, { bounds: limit.bounds, where: `task("${task.id}") in ${file}` });
      return limit;
    });
    tasks.push({ ...task, concurrency: { ...task.concurrency, limits } });
  }
  return tasks;
}

function pick(b: { perKey?: number; total?: number }): { perKey?: number; total?: number } {
  return { ...(b.perKey !== undefined ? { perKey: b.perKey } : {}), ...(b.total !== undefined ? { total: b.total } : {}) };
}

function describe(b: { perKey?: number; total?: number }): string {
  return `perKey ${b.perKey ?? "none"}, total ${b.total ?? "none"}`;
}
