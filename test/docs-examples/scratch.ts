import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { DocBlock } from "./blocks.ts";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The example project: its node_modules resolve @svc/runtime (and the root's @trigger.dev/sdk). */
const EXAMPLE = join(ROOT, "examples/hello");
const PREFIX = ".docs-test-";

/**
 * A folder inside examples/hello for the docs test's generated files (snippets to run, task files
 * for the worker, typecheck copies), so that they resolve the packages the example project does.
 * Its name starts with a dot: the repository's tsconfig does not include it. Removed on close;
 * folders of a run that died are removed by the next run once they are an hour old.
 */
export class Scratch {
  readonly dir: string;
  readonly tasksDir: string;
  readonly configPath: string;

  constructor() {
    for (const name of readdirSync(EXAMPLE)) {
      const path = join(EXAMPLE, name);
      if (name.startsWith(PREFIX) && Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true });
    }
    this.dir = join(EXAMPLE, `${PREFIX}${process.pid}-${Date.now().toString(36)}`);
    this.tasksDir = join(this.dir, "tasks");
    mkdirSync(this.tasksDir, { recursive: true });
    this.configPath = join(this.dir, "svc.config.ts");
    // The example's own tasks and the docs' `ts task` blocks.
    writeFileSync(this.configPath, `import { defineConfig } from "@svc/runtime";\nexport default defineConfig({ dirs: ["../src/tasks", "./tasks"] });\n`);
  }

  /** A file name that says where the block is: `docs-durable-waits.md-L42.ts`. */
  static fileName(block: DocBlock): string {
    return `${block.doc.replace(/[\\/]/g, "-")}-L${block.line}.ts`;
  }

  write(subdir: string, name: string, text: string): string {
    const dir = join(this.dir, subdir);
    mkdirSync(dir, { recursive: true });
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
