import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, migrate, withTransaction } from "@svc/runtime/db";
import { ensureDefaultProject, SecretBox, systemClock } from "@svc/runtime/engine";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { OwnPostgres, type StopMode } from "../../../test/own-postgres.ts";
import { TEST_ENCRYPTION_KEY } from "./harness.ts";
import { installQueueSchema } from "../src/queue/install.ts";
import { OUTAGE_FIXTURE, spawnApi, spawnWorker, type ServiceProcess } from "./processes.ts";

// Postgres restarted under a running API and two worker processes, with runs executing, waiting
// on tokens and being triggered and completed over HTTP the whole time. Nothing may exit, every
// answer is a success or a 503 JSON error with Retry-After, and every run completes.
const RESTARTS = 10;

let pg: OwnPostgres;
let api: ServiceProcess;
const workers: ServiceProcess[] = [];
let base: string;
let auth: Record<string, string>;

beforeAll(async () => {
  pg = await OwnPostgres.create();
  const pool = createPool(pg.url, { max: 2 });
  await migrate(pool);
  const project = await withTransaction(pool, (tx) => ensureDefaultProject(tx, new SecretBox(TEST_ENCRYPTION_KEY), systemClock.now()));
  await pool.end();
  await installQueueSchema(pg.url);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const key = project.environments.dev.secretKey;
  auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  api = spawnApi(pg.url, port, { SERVICE_API_URL: base });
  for (let i = 0; i < 2; i++) workers.push(spawnWorker(pg.url, key, OUTAGE_FIXTURE, { SERVICE_API_URL: base, WORKER_LEASE_MS: "6000" }));
  await Promise.all([api.ready, ...workers.map((w) => w.ready)]);
}, 120_000);

afterAll(async () => {
  for (const p of [api, ...workers]) p?.child.kill("SIGKILL");
  await Promise.all([api, ...workers].filter(Boolean).map((p) => p.exited));
  await pg?.destroy();
});

interface Answer {
  status: number;
  body: any;
  retryAfter: string | null;
  contentType: string | null;
  what: string;
}

describe("a Postgres restart under load", () => {
  it(`kills no process, answers 503 while the database is away and completes every run (${RESTARTS} restarts)`, async () => {
    const answers: Answer[] = [];
    /** One request; a refused or reset connection fails the test (the API must stay up and answer). */
    async function call(method: string, path: string, body?: unknown): Promise<Answer> {
      const response = await fetch(base + path, { method, headers: auth, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {}
      const answer = { status: response.status, body: parsed, retryAfter: response.headers.get("retry-after"), contentType: response.headers.get("content-type"), what: `${method} ${path}` };
      answers.push(answer);
      return answer;
    }
    /** Repeats an idempotent request until it succeeds (through any number of 503s). */
    async function untilOk(method: string, path: string, body?: unknown): Promise<any> {
      for (;;) {
        const answer = await call(method, path, body);
        if (answer.status < 300) return answer.body;
        if (answer.status !== 503) throw new Error(`${method} ${path} → ${answer.status} ${JSON.stringify(answer.body)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }

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
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
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
    for (const run of runs) {
      for (;;) {
        const detail = await untilOk("GET", `/api/v3/runs/${run.runId}`);
        if (detail.status === "COMPLETED") {
          expect(detail.output).toMatchObject({ n: run.n, got: { n: run.n } });
          break;
        }
        expect(["QUEUED", "EXECUTING", "WAITING", "DELAYED", "PENDING_VERSION", "DEQUEUED", "REATTEMPTING"]).toContain(detail.status);
        if (Date.now() > deadline) throw new Error(`run ${run.runId} still ${detail.status}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }

    // Every answer was a success or a 503 JSON error with Retry-After; nothing exited.
    const failures = answers.filter((a) => a.status >= 300 && !(a.status === 503 && typeof a.body?.error === "string" && a.retryAfter && a.contentType?.startsWith("application/json")));
    expect(failures).toEqual([]);
    expect(answers.filter((a) => a.status === 503).length).toBeGreaterThan(RESTARTS);
    for (const p of [api, ...workers]) expect(p.child.exitCode, p.output().slice(-3000)).toBeNull();
    const attempts = await Promise.all(runs.map(async (r) => (await untilOk("GET", `/api/v3/runs/${r.runId}`)).output.attempt as number));
    // Backing off quietly: a restart costs a few warnings per process, not a line per failed try.
    const logLines = [api, ...workers].map((p) => p.output().split("\n").length);
    for (const [i, p] of [api, ...workers].entries()) expect(logLines[i], p.output().slice(-3000)).toBeLessThan(5 * RESTARTS);
    console.log(`attempts > 1: ${attempts.filter((a) => a > 1).length}; log lines: ${logLines.join(", ")}`);
    console.log(`outage test: ${runs.length} waiting runs, ${answers.length} answers, ${answers.filter((a) => a.status === 503).length} were 503; recovery after restart (ms): ${recoveries.join(", ")}`);
  }, 300_000);
});
