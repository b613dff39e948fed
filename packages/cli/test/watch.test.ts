import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { watchCode, type CodeWatcher } from "../src/dev/watch.ts";

let root: string;
let watcher: CodeWatcher;
/** Batches of changed files the watcher reported, and whoever waits for the next one. */
let batches: string[][];
let waiting: ((files: string[]) => void) | undefined;
let errors: Error[];

const path = (file: string) => join(root, file);

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "svc-watch-"));
  mkdirSync(path("src/tasks"), { recursive: true });
  mkdirSync(path("src/lib"), { recursive: true });
  mkdirSync(path("node_modules/dep"), { recursive: true });
  writeFileSync(path("src/tasks/a.ts"), "import { b } from '../lib/b.ts';\nexport const a = b;\n");
  writeFileSync(path("src/lib/b.ts"), "export const b = 1;\n");
  writeFileSync(path("src/lib/unused.ts"), "export const unused = 1;\n");
  batches = [];
  errors = [];
  waiting = undefined;
  watcher = watchCode(
    root,
    (files) => {
      if (waiting) {
        const resolve = waiting;
        waiting = undefined;
        resolve(files);
      } else batches.push(files);
    },
    { quietMs: 50, onError: (error) => errors.push(error) },
  );
});

afterEach(async () => {
  await watcher.close();
  rmSync(root, { recursive: true, force: true });
  expect(errors).toEqual([]);
});

/** The next batch of changed files the watcher reports. */
function nextChange(): Promise<string[]> {
  const queued = batches.shift();
  if (queued) return Promise.resolve(queued);
  return new Promise((resolve) => (waiting = resolve));
}

/** What the worker loaded: the task file, what it imports, and the task folder. */
const graph = () => ({ files: [path("src/tasks/a.ts"), path("src/lib/b.ts")], taskDirs: [path("src/tasks")] });

describe("svc dev's code watcher", () => {
  it("sees every later save of a file that `sed -i` replaced by a rename", async () => {
    await watcher.watch(graph());
    execFileSync("sed", ["-i", "s/1/2/", path("src/lib/b.ts")]);
    expect(await nextChange()).toEqual([join("src", "lib", "b.ts")]);
    // Node's fs.watch followed the old inode: this write, after the rename, went unseen.
    writeFileSync(path("src/lib/b.ts"), "export const b = 3;\n");
    expect(await nextChange()).toEqual([join("src", "lib", "b.ts")]);
    execFileSync("sed", ["-i", "s/3/4/", path("src/lib/b.ts")]);
    expect(await nextChange()).toEqual([join("src", "lib", "b.ts")]);
    writeFileSync(path("src/lib/b.ts"), "export const b = 5;\n");
    expect(await nextChange()).toEqual([join("src", "lib", "b.ts")]);
  });

  it("sees an editor's atomic save (write a temporary file, rename it over) of a task file, then a plain write", async () => {
    await watcher.watch(graph());
    writeFileSync(path("src/tasks/.a.ts.swp"), "export const a = 2;\n");
    renameSync(path("src/tasks/.a.ts.swp"), path("src/tasks/a.ts"));
    expect(await nextChange()).toEqual([join("src", "tasks", "a.ts")]);
    writeFileSync(path("src/tasks/a.ts"), "export const a = 3;\n");
    expect(await nextChange()).toEqual([join("src", "tasks", "a.ts")]);
  });

  it("ignores files the worker did not load: a helper nobody imports, node_modules, a test file", async () => {
    await watcher.watch(graph());
    writeFileSync(path("src/lib/unused.ts"), "export const unused = 2;\n");
    writeFileSync(path("node_modules/dep/index.js"), "x");
    writeFileSync(path("src/tasks/a.test.ts"), "x");
    writeFileSync(path("README.md"), "x");
    // Then a file it did load: the first batch reported holds that one only.
    writeFileSync(path("src/tasks/a.ts"), "export const a = 4;\n");
    expect(await nextChange()).toEqual([join("src", "tasks", "a.ts")]);
  });

  it("sees a task file added to a task folder, also in a folder made later", async () => {
    await watcher.watch(graph());
    writeFileSync(path("src/tasks/new.ts"), "export {};\n");
    expect(await nextChange()).toEqual([join("src", "tasks", "new.ts")]);
    mkdirSync(path("src/tasks/billing"));
    writeFileSync(path("src/tasks/billing/invoice.ts"), "export {};\n");
    expect(await nextChange()).toEqual([join("src", "tasks", "billing", "invoice.ts")]);
    unlinkSync(path("src/tasks/new.ts"));
    expect(await nextChange()).toEqual([join("src", "tasks", "new.ts")]);
  });

  it("follows the graph of the last worker: a file no longer imported stops counting, a newly imported one starts", async () => {
    await watcher.watch(graph());
    await watcher.watch({ files: [path("src/tasks/a.ts"), path("src/lib/unused.ts")], taskDirs: [path("src/tasks")] });
    writeFileSync(path("src/lib/b.ts"), "export const b = 9;\n");
    writeFileSync(path("src/lib/unused.ts"), "export const unused = 9;\n");
    expect(await nextChange()).toEqual([join("src", "lib", "unused.ts")]);
  });
});
