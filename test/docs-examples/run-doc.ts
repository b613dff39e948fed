import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DocBlock } from "./blocks.ts";
import { bashSteps } from "./bash-steps.ts";
import type { LiveSvc } from "./live-svc.ts";
import { runStep } from "./run-bash.ts";
import { runTsBlock } from "./run-ts.ts";
import { ROOT, type Scratch } from "./scratch.ts";

export interface DocRun {
  bashBlocks: number;
  bashSteps: number;
  tsBlocks: number;
  /** How long the doc's steps took, all together. */
  ms: number;
}

/**
 * Where a doc's time went: its slowest steps, each with its place in the doc. A step that would
 * start past `budgetMs` throws instead, naming them, rather than leave the bare test timeout.
 */
class StepTimes {
  readonly #times: { where: string; ms: number }[] = [];
  readonly #started = Date.now();

  constructor(readonly budgetMs: number | undefined) {}

  async time<T>(where: string, step: () => Promise<T>): Promise<T> {
    if (this.budgetMs !== undefined && this.elapsedMs > this.budgetMs) {
      throw new Error(`${where}: the doc's examples ran past their ${this.budgetMs / 1000} s: ${this.describe()}`);
    }
    const started = Date.now();
    try {
      return await step();
    } finally {
      this.#times.push({ where, ms: Date.now() - started });
    }
  }

  get elapsedMs(): number {
    return Date.now() - this.#started;
  }

  describe(): string {
    const slowest = [...this.#times].sort((a, b) => b.ms - a.ms).slice(0, 5);
    return `${this.#times.length} steps in ${(this.elapsedMs / 1000).toFixed(1)} s; the slowest: ${slowest.map((t) => `${t.where} ${t.ms} ms`).join(", ")}`;
  }
}

const RUNNABLE_BASH = new Set(["bash", "sh", "shell"]);
const RUNNABLE_TS = new Set(["ts", "typescript"]);

/**
 * Runs a doc's `bash test` and `ts test` blocks in order against the live svc, as a reader would
 * in one terminal (variables carry over from step to step, and exported ones reach the
 * TypeScript examples), then checks the runs the doc made: a
 * run of a task no worker has (svc accepts any task id and queues the run until a worker has the
 * task, so a misspelt task name would otherwise pass) or a run that failed means a broken example.
 */
export async function runDoc(blocks: DocBlock[], live: LiveSvc, scratch: Scratch, options: { readTimeoutMs?: number; budgetMs?: number } = {}): Promise<DocRun> {
  const startedAt = new Date();
  const work = mkdtempSync(join(tmpdir(), "svc-docs-"));
  const counts = { bashBlocks: 0, bashSteps: 0, tsBlocks: 0 };
  const stateFile = join(work, "state.sh");
  const times = new StepTimes(options.budgetMs);
  try {
    for (const block of blocks) {
      if (block.kind !== "test") continue;
      if (RUNNABLE_BASH.has(block.lang)) {
        counts.bashBlocks++;
        for (const step of bashSteps(block)) {
          counts.bashSteps++;
          const where = `${block.doc}:${step.line}`;
          await times.time(where, () => runStep(step, { where, env: live.env, cwd: ROOT, stateFile, readTimeoutMs: options.readTimeoutMs ?? 15_000 }));
        }
      } else if (RUNNABLE_TS.has(block.lang)) {
        counts.tsBlocks++;
        await times.time(`${block.doc}:${block.line}`, () => runTsBlock(block, scratch, live.env, stateFile));
      } else {
        throw new Error(`${block.doc}:${block.line}: cannot run a \`${block.lang} test\` block (bash or ts)`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const problems = await brokenRuns(live, startedAt);
  if (problems.length) throw new Error(`${blocks[0]?.doc ?? "the doc"}: its examples made runs that show a broken example:\n  ${problems.join("\n  ")}`);
  if (options.budgetMs !== undefined && times.elapsedMs > options.budgetMs / 2) console.log(`${blocks[0]?.doc ?? "the doc"}: ${times.describe()}`);
  return { ...counts, ms: times.elapsedMs };
}

/** Runs created since `since` of a task no worker of their environment has, or that failed. */
export async function brokenRuns(live: LiveSvc, since: Date): Promise<string[]> {
  const { rows } = await live.te.db.pool.query<{ id: string; task_identifier: string; status: string; registered: boolean }>(
    `SELECT r.id, r.task_identifier, r.status,
            EXISTS (SELECT 1 FROM worker_tasks w WHERE w.environment_id = r.environment_id AND w.task_identifier = r.task_identifier) AS registered
       FROM runs r
      WHERE r.created_at >= $1
      ORDER BY r.created_at`,
    [since],
  );
  return rows
    .filter((r) => !r.registered || ["FAILED", "CRASHED", "SYSTEM_FAILURE"].includes(r.status))
    .map((r) => (r.registered ? `${r.id} (${r.task_identifier}) ended ${r.status}` : `${r.id} is a run of "${r.task_identifier}", a task no worker has (a misspelt task name?)`));
}
