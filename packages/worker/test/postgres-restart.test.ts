import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StopMode } from "../../../test/own-postgres.ts";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { apiClient, startOwnCluster, type OwnCluster } from "./own-cluster.ts";
import { OUTAGE_FIXTURE, spawnApi, spawnWorker } from "./processes.ts";

// Postgres restarted under a running API and two worker processes, with runs executing, waiting
// on tokens and being triggered and completed over HTTP the whole time. Nothing may exit, every
// answer is a success or a 503 JSON error with Retry-After, and every run completes.
const RESTARTS = 10;
let cluster: OwnCluster;

beforeAll(async () => {
  cluster = await startOwnCluster({ workers: 2, workerEnv: { WORKER_LEASE_MS: "6000" } });
}, 120_000);
afterAll(async () => {
  await cluster?.close();
});

describe("a Postgres restart under load", () => {
  it(`kills no process, answers 503 while the database is away and completes every run (${RESTARTS} restarts)`, async () => {
    const { base, pg } = cluster;
    const { answers, call, untilOk, failures } = apiClient(cluster);

    // Each run waits for its own token; idempotency keys make every retry safe.
    const runs: { n: number; runId: string; tokenId: string; completed: boolean }[] = [];
    async function startRun(n: number) {
      const token = await untilOk("POST", "/api/v1/waitpoints/tokens", { timeout: "1h", idempotencyKey: `token-${n}` });
      const run = await untilOk("POST", "/api/v1/tasks/outage-approval/trigger", {
        payload: { tokenId: token.id, n, holdMs: 20 },
        options: { idempotencyKey: `run-${n}` },
      });
      runs.push({ n, runId: run.id, tokenId: token.id, completed: false });
    }
    async function completeOne() {
      const run = runs.find((r) => !r.completed);
      if (!run) return;
      run.completed = true;
      await untilOk("POST", `/api/v1/waitpoints/tokens/${run.tokenId}/complete`, { data: { n: run.n } });
    }

    let n = 0;
    for (; n < 20; n++) await startRun(n);

    // Load the whole time: new runs, completions, reads, and quick runs that execute across restarts.
    let loading = true;
    let loadError: unknown = null;
    const load = (async () => {
      let i = 0;
      while (loading) {
        i++;
        if (i % 3 === 0) await startRun(n++);
        else if (i % 3 === 1) await completeOne();
        else await untilOk("POST", "/api/v1/tasks/outage-quick/trigger", { payload: { n: i, holdMs: 200 }, options: { idempotencyKey: `quick-${i}` } });
        await untilOk("GET", `/api/v3/runs/${runs[i % runs.length]!.runId}`);
      }
    })().catch((error) => {
      loadError = error;
    });

    const recoveries: number[] = [];
    for (let restart = 0; restart < RESTARTS; restart++) {
      const mode: StopMode = restart % 2 === 0 ? "immediate" : "fast";
      await new Promise((r) => setTimeout(r, 700));
      await pg.stop(mode);
      // While it is down: the API answers, with 503.
      const down = await call("GET", `/api/v3/runs/${runs[0]!.runId}`);
      expect(down.status, JSON.stringify(down)).toBe(503);
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      await new Promise((r) => setTimeout(r, 500));
      await pg.start();
      const back = Date.now();
      while ((await fetch(`${base}/readyz`)).status !== 200) await new Promise((r) => setTimeout(r, 20));
      recoveries.push(Date.now() - back);
    }
    loading = false;
    await load;
    expect(loadError).toBeNull();
    while (runs.some((r) => !r.completed)) await completeOne();

    // Every run completes, with the output of its token's completion.
    const deadline = Date.now() + 60_000;
    const attempts: number[] = [];
    for (const run of runs) {
      for (;;) {
        const detail = await untilOk("GET", `/api/v3/runs/${run.runId}`);
        if (detail.status === "COMPLETED") {
          expect(detail.output).toMatchObject({ n: run.n, got: { n: run.n } });
          attempts.push(detail.output.attempt);
          break;
        }
        expect(["QUEUED", "EXECUTING", "WAITING", "DELAYED", "PENDING_VERSION", "DEQUEUED", "REATTEMPTING"]).toContain(detail.status);
        if (Date.now() > deadline) throw new Error(`run ${run.runId} still ${detail.status}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }

    // Every answer was a success or a 503 JSON error with Retry-After; nothing exited.
    expect(failures()).toEqual([]);
    expect(answers.filter((a) => a.status === 503).length).toBeGreaterThan(RESTARTS);
    const processes = [cluster.api, ...cluster.workers];
    for (const p of processes) expect(p.child.exitCode, p.output().slice(-3000)).toBeNull();
    // Backing off quietly: a restart costs a few warnings per process, not a line per failed try.
    const logLines = processes.map((p) => p.output().split("\n").length);
    for (const [i, p] of processes.entries()) expect(logLines[i], p.output().slice(-3000)).toBeLessThan(5 * RESTARTS);
    console.log(
      `${RESTARTS} restarts: ${runs.length} waiting runs (${attempts.filter((a) => a > 1).length} needed a second attempt), ` +
        `${answers.length} answers, ${answers.filter((a) => a.status === 503).length} of them 503; ` +
        `ready again after (ms): ${recoveries.join(", ")}; log lines per process: ${logLines.join(", ")}`,
    );
  }, 300_000);

  it("an API and a worker started while Postgres is down wait for it, then start", async () => {
    await cluster.pg.stop("fast");
    const port = await freePort();
    const api = spawnApi(cluster.pg.url, port);
    const worker = spawnWorker(cluster.pg.url, cluster.secretKey, OUTAGE_FIXTURE);
    try {
      const waiting = (p: typeof api) => p.output().includes('"where":"startup"') && p.output().includes('"retrying":true') && p.output().includes("cannot reach Postgres at");
      while (!waiting(api) || !waiting(worker)) {
        expect(api.child.exitCode, api.output()).toBeNull();
        expect(worker.child.exitCode, worker.output()).toBeNull();
        await new Promise((r) => setTimeout(r, 50));
      }
      await cluster.pg.start();
      await Promise.all([api.ready, worker.ready]);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    } finally {
      api.child.kill("SIGKILL");
      worker.child.kill("SIGKILL");
      await Promise.all([api.exited, worker.exited]);
    }
  }, 120_000);
});
