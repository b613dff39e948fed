// Real processes: a worker with WORKER_METRICS_PORT serves its own metrics (slots, finished runs,
// resume latency after a token completion), and the API's database-wide gauges move with them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { sample } from "../../api/test/prometheus-text.ts";
import { eventually, getRunRow, startTestEngine, TEST_ENCRYPTION_KEY, type TestEngine } from "./harness.ts";
import { parseWorkerConfig } from "../src/config.ts";
import { CRASH_FIXTURE, spawnApi, spawnWorker, type ServiceProcess } from "./processes.ts";

const TOKEN = "worker-metrics-token";
let te: TestEngine;
const processes: ServiceProcess[] = [];
let workerUrl: string;
let apiUrl: string;

beforeAll(async () => {
  te = await startTestEngine();
  await te.db.pool.query(`CREATE TABLE test_marks (run_id text, what text, pid int, at timestamptz DEFAULT now())`);
  const [metricsPort, apiPort] = [await freePort(), await freePort()];
  const worker = spawnWorker(te.db.url, te.project.environments.dev.secretKey, CRASH_FIXTURE, { WORKER_METRICS_PORT: String(metricsPort), METRICS_TOKEN: TOKEN });
  const api = spawnApi(te.db.url, apiPort, { METRICS_TOKEN: TOKEN });
  processes.push(worker, api);
  await Promise.all([worker.ready, api.ready]);
  workerUrl = `http://127.0.0.1:${metricsPort}`;
  apiUrl = `http://127.0.0.1:${apiPort}`;
});
afterAll(async () => {
  for (const p of processes) p.child.kill("SIGKILL");
  await Promise.all(processes.map((p) => p.exited));
  await te?.close();
});

async function scrape(base: string): Promise<string> {
  const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return res.text();
}

describe("worker metrics (WORKER_METRICS_PORT)", () => {
  it("refuses a missing or wrong token with a 401 JSON error, and answers other paths and methods with 4xx JSON", async () => {
    for (const headers of [{} as Record<string, string>, { authorization: "Bearer nope" }, { authorization: `Bearer ${TOKEN}-` }, { authorization: TOKEN }, { authorization: "Bearer " }]) {
      const res = await fetch(`${workerUrl}/metrics`, { headers });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: expect.stringContaining("metrics token") });
    }
    const other = await fetch(`${workerUrl}/nothing-here?x=%zz`);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ error: expect.any(String) });
    const post = await fetch(`${workerUrl}/metrics`, { method: "POST", body: "x", headers: { authorization: `Bearer ${TOKEN}` } });
    expect(post.status).toBe(405);
    expect(await post.json()).toEqual({ error: expect.any(String) });
  });

  it("reports slots in use while a run executes and counts it finished", async () => {
    const before = await scrape(workerUrl);
    expect(sample(before, "svc_worker_slots")).toBe(4);
    expect(sample(before, "svc_worker_slots_in_use")).toBe(0);
    expect(sample(before, "process_resident_memory_bytes")).toBeGreaterThan(0);

    const run = await triggerRun(te.engine, te.env, "slow", { holdMs: 1500 });
    await eventually(async () => {
      const { rows } = await te.db.pool.query(`SELECT 1 FROM test_marks WHERE run_id = $1`, [run.id]);
      return rows.length > 0;
    });
    expect(sample(await scrape(workerUrl), "svc_worker_slots_in_use")).toBe(1);
    await eventually(async () => (await getRunRow(te, run.id)).status === "COMPLETED");
    await eventually(async () => sample(await scrape(workerUrl), "svc_runs_finished_total", { status: "COMPLETED" }) === 1);
    expect(sample(await scrape(workerUrl), "svc_worker_slots_in_use")).toBe(0);
  });

  it("observes the resume latency after a token completion, and the API sees the run waiting", async () => {
    const { waitpoint } = await createToken(te.engine, te.env.id, { timeout: "1h" });
    const triggered = await fetch(`${apiUrl}/api/v1/tasks/wait-then-work/trigger`, {
      method: "POST",
      headers: { authorization: `Bearer ${te.project.environments.dev.secretKey}`, "content-type": "application/json" },
      body: JSON.stringify({ payload: { tokenId: waitpoint.id, holdAfterMs: 0 } }),
    });
    expect(triggered.status).toBe(200);
    const run = (await triggered.json()) as { id: string };
    await eventually(async () => (await getRunRow(te, run.id)).status === "WAITING");

    const api = await scrape(apiUrl);
    expect(sample(api, "svc_runs_triggered_total")).toBe(1);
    expect(sample(api, "svc_runs_waiting")).toBe(1);
    expect(sample(api, "svc_http_request_duration_seconds_count", { method: "POST", route: "/api/v1/tasks/:taskId/trigger", status: "200" })).toBe(1);
    const before = await scrape(workerUrl);
    const resumesBefore = sample(before, "svc_resume_latency_seconds_count") ?? 0;

    const completedAt = Date.now();
    await withTransaction(te.engine.db, (tx) => completeToken(te.engine, tx, waitpoint.id, { ok: true, output: { n: 7 } }));
    await eventually(async () => (await getRunRow(te, run.id)).status === "COMPLETED");
    const elapsed = (Date.now() - completedAt) / 1000;

    const after = await scrape(workerUrl);
    expect(sample(after, "svc_resume_latency_seconds_count")).toBe(resumesBefore + 1);
    const sum = sample(after, "svc_resume_latency_seconds_sum")! - (sample(before, "svc_resume_latency_seconds_sum") ?? 0);
    expect(sum).toBeGreaterThanOrEqual(0);
    expect(sum).toBeLessThanOrEqual(elapsed);
    expect(sample(after, "svc_resume_latency_seconds_bucket", { le: "+Inf" })).toBe(resumesBefore + 1);
    expect(sample(after, "svc_runs_finished_total", { status: "COMPLETED" })).toBe(2);
    expect(sample(await scrape(apiUrl), "svc_runs_waiting")).toBe(0);
  });
});

describe("metrics configuration", () => {
  const base = { DATABASE_URL: "postgres://127.0.0.1/x", SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY };
  it("serves no metrics without WORKER_METRICS_PORT (unset or empty), and refuses a port that is not one", () => {
    expect(parseWorkerConfig(base).WORKER_METRICS_PORT).toBeUndefined();
    expect(parseWorkerConfig({ ...base, WORKER_METRICS_PORT: "" }).WORKER_METRICS_PORT).toBeUndefined();
    expect(parseWorkerConfig({ ...base, WORKER_METRICS_PORT: "9464", METRICS_TOKEN: "t" })).toMatchObject({ WORKER_METRICS_PORT: 9464, METRICS_TOKEN: "t" });
    expect(parseWorkerConfig({ ...base, METRICS_TOKEN: "" }).METRICS_TOKEN).toBeUndefined();
    for (const bad of ["abc", "70000", "-1", "1.5"]) expect(() => parseWorkerConfig({ ...base, WORKER_METRICS_PORT: bad }), bad).toThrow(/WORKER_METRICS_PORT/);
  });
});
