import { createHash } from "node:crypto";
import { readdir, readFile, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { isQueue, isTask, type Queue, type SvcConfig, type Task } from "@svc/runtime/sdk";


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
      if (!isTask(value)) continue;
      const existing = byId.get(value.id);
      if (existing && existing.task !== value) throw new Error(`duplicate task id "${value.id}" in ${existing.file} and ${file}`);
      byId.set(value.id, { task: value, file });
    }
  }
  return { tasks: [...byId.values()].map((v) => withDeclaredQueue(v.task, queues)), version: hash.digest("hex").slice(0, 12), files, dirs };
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

