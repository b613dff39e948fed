import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, startOwnCluster, type OwnCluster } from "./own-cluster.ts";
import type { ServiceProcess } from "./processes.ts";

// A bounded chaos run: 100 runs that each record a step and then wait on a token, while their
// tokens are completed (each twice) and, in between, a worker and the API are killed with -9 and
// Postgres crashes (pg_ctl stop -m immediate). Every run must complete with its token's first
// completion as its output, and no step whose value was recorded may run again.
const RUNS = 100;
let cluster: OwnCluster;
let dir: string;
const stepLog = () => join(dir, "steps.log");

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "svc-chaos-"));
  cluster = await startOwnCluster({ workers: 2, workerEnv: { WORKER_LEASE_MS: "3000", SVC_TEST_STEP_LOG: join(dir, "steps.log") } });
}, 120_000);
afterAll(async () => {
  await cluster?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function kill(process: ServiceProcess) {
  process.child.kill("SIGKILL");
  await process.exited;
}

describe("chaos: kill -9 of a worker and of the API, and a Postgres crash, while 100 runs wait on tokens", () => {
  it("completes every run with its token's first completion, and runs no recorded step again", async () => {
    const { untilOk, failures } = apiClient(cluster);
    const whileRefused = { whileRefused: true };
    const runs: { n: number; runId: string; tokenId: string }[] = [];
    for (let n = 0; n < RUNS; n++) {
      const token = await untilOk("POST", "/api/v1/waitpoints/tokens", { timeout: "1h", idempotencyKey: `token-${n}` });
      const run = await untilOk("POST", "/api/v1/tasks/chaos-step-then-wait/trigger", { payload: { tokenId: token.id, n }, options: { idempotencyKey: `run-${n}` } });
      runs.push({ n, runId: run.id, tokenId: token.id });
    }
    // Some runs are still starting when the first worker dies: their steps may run before a record.
    let [workerA, workerB] = cluster.workers as [ServiceProcess, ServiceProcess];
    await kill(workerA);
    workerA = await cluster.addWorker();

    // Each token is completed twice: the first completion (which: 1) must be the run's output.
    const complete = async (run: (typeof runs)[number]) => {
      await untilOk("POST", `/api/v1/waitpoints/tokens/${run.tokenId}/complete`, { data: { n: run.n, which: 1 } }, whileRefused);
      await untilOk("POST", `/api/v1/waitpoints/tokens/${run.tokenId}/complete`, { data: { n: run.n, which: 2 } }, whileRefused);
    };
    const quarter = RUNS / 4;
    const chaos = [
      async () => {
        await kill(cluster.api);
        cluster.api = await cluster.restartApi();
      },
      async () => {
        await cluster.pg.stop("immediate");
        await cluster.pg.start();
      },
      async () => {
        await kill(workerB);
        workerB = await cluster.addWorker();
      },
    ];
    for (let q = 0; q < 4; q++) {
      const batch = runs.slice(q * quarter, (q + 1) * quarter);
      // The chaos strikes while this quarter's completions are under way.
      await Promise.all([Promise.all(batch.map(complete)), chaos[q]?.()]);
    }

    const deadline = Date.now() + 90_000;
    const outputs = new Map<string, { n: number; nonce: string; got: { n: number; which: number } }>();
    for (const run of runs) {
      for (;;) {
        const detail = await untilOk("GET", `/api/v3/runs/${run.runId}`, undefined, whileRefused);
        if (detail.status === "COMPLETED") {
          outputs.set(run.runId, detail.output);
          break;
        }
        expect(["QUEUED", "EXECUTING", "WAITING", "DEQUEUED", "REATTEMPTING"], `run ${run.n}`).toContain(detail.status);
        if (Date.now() > deadline) throw new Error(`run ${run.n} (${run.runId}) still ${detail.status}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    for (const run of runs) expect(outputs.get(run.runId)).toMatchObject({ n: run.n, got: { n: run.n, which: 1 } });

    // The value a run returned from its step is the one recorded; had the step run again after
    // that record, a later line of the log would carry another value for the run.
    expect(existsSync(stepLog())).toBe(true);
    const lastValue = new Map<string, string>();
    for (const line of readFileSync(stepLog(), "utf8").trim().split("\n")) {
      const [runId, value] = line.split(" ");
      lastValue.set(runId!, value!);
    }
    for (const run of runs) expect(lastValue.get(run.runId), `run ${run.n}`).toBe(outputs.get(run.runId)!.nonce);

    expect(failures()).toEqual([]);
    for (const p of [cluster.api, workerA, workerB]) expect(p.child.exitCode, p.output().slice(-3000)).toBeNull();
    const reruns = readFileSync(stepLog(), "utf8").trim().split("\n").length - RUNS;
    console.log(`chaos: ${RUNS} runs completed; ${reruns} step executions were repeated before their value was recorded`);
  }, 300_000);
});
