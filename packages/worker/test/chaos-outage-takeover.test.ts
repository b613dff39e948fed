import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, startOwnCluster, type OwnCluster } from "./own-cluster.ts";
import type { ServiceProcess } from "./processes.ts";

// Postgres goes away for longer than an execution's lease (3 s here), while the workers stay alive
// with runs in the middle of a step. When it is back, the runs' leases lapse, so other executions
// take them over while the first ones are still retrying their records; then a worker is killed -9. Every run must complete, and no step whose record any execution saw may run again.
//
// SVC_CHAOS_ROUNDS (default 1) repeats the whole scenario on fresh clusters (the issue asks for 20).
const ROUNDS = Number(process.env.SVC_CHAOS_ROUNDS ?? 1);
const RUNS = 40;
const OUTAGE_MS = 15_000;

interface StepLine {
  runId: string;
  kind: "started" | "ran" | "recorded";
  step: string;
  value: string;
}

const readLog = (file: string): StepLine[] =>
  existsSync(file)
    ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((line) => {
        const [runId, kind, step, value] = line.split(" ");
        return { runId: runId!, kind: kind as StepLine["kind"], step: step!, value: value! };
      })
    : [];

/**
 * Recorded steps that ran again. An execution logs "recorded" only once step.run returned, that is
 * once the record committed, and "started" as the step's function begins; a record refused (its
 * execution lost the run) logs nothing. So a step whose function started after a "recorded" line
 * of it, or that was recorded with two values, ran again after its record. (An execution whose
 * function was still running when another took the run over, and ran the step too, ran it twice
 * before any record: allowed, whichever of them finishes first.)
 */
function rerunRecordedSteps(lines: StepLine[]): string[] {
  const problems = new Set<string>();
  const recorded = new Map<string, string>();
  for (const l of lines) {
    const key = `${l.runId} ${l.step}`;
    const seen = recorded.get(key);
    if (seen === undefined) {
      if (l.kind === "recorded") recorded.set(key, l.value);
    } else if (l.kind === "started") {
      problems.add(`${key}: started again after ${seen} was recorded`);
    } else if (l.kind === "recorded" && l.value !== seen) {
      problems.add(`${key}: recorded with ${l.value} after ${seen} was recorded`);
    }
  }
  return [...problems];
}

async function kill(process: ServiceProcess) {
  process.child.kill("SIGKILL");
  await process.exited;
}

async function round(n: number): Promise<{ reruns: string[]; repeated: number; completed: number }> {
  const dir = mkdtempSync(join(tmpdir(), "svc-chaos-takeover-"));
  const log = join(dir, "steps.log");
  let cluster: OwnCluster | undefined;
  try {
    // Slots for every run: all of them are in their first step when Postgres goes away.
    cluster = await startOwnCluster({ workers: 2, workerEnv: { WORKER_LEASE_MS: "3000", WORKER_CONCURRENCY: String(RUNS), SVC_TEST_STEP_LOG: log, SVC_TEST_HOLD_MS: String(OUTAGE_MS + 5000) } });
    const { untilOk } = apiClient(cluster);
    const whileRefused = { whileRefused: true };
    const runIds: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const run = await untilOk("POST", "/api/v1/tasks/chaos-takeover/trigger", { payload: { n: i }, options: { idempotencyKey: `r${n}-${i}` } });
      runIds.push(run.id);
    }
    // Postgres goes away once every run is in its first step, which takes from 0 to 5 s past the
    // outage: some records land during the outage (and are retried), some as Postgres comes back,
    // while the runs' jobs are redelivered, some after.
    for (;;) {
      const started = new Set(readLog(log).filter((l) => l.kind === "started" && l.step === "before").map((l) => l.runId));
      if (started.size >= RUNS) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await cluster.pg.stop("immediate");
    await new Promise((r) => setTimeout(r, OUTAGE_MS));
    await cluster.pg.start();

    // Tokens are completed as their runs record them (the rest time out after 20 s); once half of
    // the runs have a token, a worker dies.
    const completedTokens = new Set<string>();
    let [workerA] = cluster.workers as [ServiceProcess, ServiceProcess];
    let killed = false;
    const deadline = Date.now() + 180_000;
    const statuses = new Map<string, string>();
    while (runIds.some((id) => statuses.get(id) !== "COMPLETED")) {
      if (Date.now() > deadline) throw new Error(`runs not completed: ${runIds.filter((id) => statuses.get(id) !== "COMPLETED").map((id) => `${id} ${statuses.get(id)}`).join(", ")}`);
      const tokens = readLog(log).filter((l) => l.kind === "recorded" && l.step === "record-token").map((l) => l.value);
      for (const token of tokens) {
        if (completedTokens.has(token)) continue;
        completedTokens.add(token);
        // Refused (null): the API is away; the token then times out instead.
        await untilOk("POST", `/api/v1/waitpoints/tokens/${token}/complete`, { data: { token } }, whileRefused);
      }
      if (!killed && completedTokens.size >= RUNS / 2) {
        killed = true;
        await kill(workerA);
        workerA = await cluster.addWorker();
      }
      for (const id of runIds) {
        if (statuses.get(id) === "COMPLETED") continue;
        const detail = await untilOk("GET", `/api/v3/runs/${id}`, undefined, whileRefused);
        if (!detail) continue;
        expect(["QUEUED", "EXECUTING", "WAITING", "DEQUEUED", "REATTEMPTING", "COMPLETED"], `run ${id}: ${JSON.stringify(detail.error ?? null)}`).toContain(detail.status);
        statuses.set(id, detail.status);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    const lines = readLog(log);
    const ranBefore = lines.filter((l) => l.kind === "ran").length;
    return { reruns: rerunRecordedSteps(lines), repeated: ranBefore - RUNS * 3, completed: [...statuses.values()].filter((s) => s === "COMPLETED").length };
  } finally {
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

let results: { reruns: string[]; repeated: number; completed: number }[] = [];

beforeAll(() => {
  results = [];
});
afterAll(() => {
  if (results.length > 0) console.log(`chaos (outage takeover): ${results.length} rounds, completed ${results.map((r) => r.completed).join("/")} of ${RUNS}; steps repeated before their record: ${results.map((r) => r.repeated).join(", ")}; recorded steps run again: ${results.reduce((a, r) => a + new Set(r.reruns.map((p) => p.split(":")[0])).size, 0)}`);
});

describe(`chaos: Postgres away longer than the leases while workers live and runs are mid-step (${ROUNDS} round${ROUNDS === 1 ? "" : "s"})`, () => {
  for (let n = 0; n < ROUNDS; n++) {
    it(`round ${n + 1}: completes all ${RUNS} runs and runs no recorded step again`, async () => {
      const result = await round(n);
      results.push(result);
      expect(result.reruns).toEqual([]);
      expect(result.completed).toBe(RUNS);
    }, 300_000);
  }
});
