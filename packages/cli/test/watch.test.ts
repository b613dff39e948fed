import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { watchProject, type ProjectWatcher } from "../src/dev/watch.ts";

let root: string;
let watcher: ProjectWatcher | undefined;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "svc-watch-"));
  mkdirSync(join(root, "src/tasks"), { recursive: true });
  mkdirSync(join(root, "node_modules/dep"), { recursive: true });
});
afterEach(() => {
  watcher?.close();
  rmSync(root, { recursive: true, force: true });
});

const folderWatched = new Map<string, () => void>();

/** The next batch of changes the watcher reports. */
function nextChange(): Promise<string[]> {
  return new Promise((resolve, reject) => {
    watcher = watchProject(root, resolve, { quietMs: 50, onError: reject, onFolderWatched: (name) => folderWatched.get(name)?.() });
  });
}

describe("svc dev's project watcher", () => {
  it("reports a changed task file, and not what changes in node_modules or .svc", async () => {
    const changed = nextChange();
    writeFileSync(join(root, "node_modules/dep/index.js"), "x");
    mkdirSync(join(root, ".svc"));
    writeFileSync(join(root, ".svc/pg.log"), "x");
    writeFileSync(join(root, "src/tasks/a.ts"), "export {}");
    expect(await changed).toEqual([join("src", "tasks", "a.ts")]);
  });

  it("watches a folder made after it started", async () => {
    const changed = nextChange();
    const watching = new Promise<void>((resolve) => folderWatched.set("lib", resolve));
    mkdirSync(join(root, "lib"));
    await watching;
    writeFileSync(join(root, "lib/helpers.ts"), "export {}");
    expect(await changed).toEqual([join("lib", "helpers.ts")]);
  });
});
