// Real processes: two workers and an API on one database. The runs a worker creates (child runs
// of task code, scheduled runs its timers fire, a session's next run handed over in task code) are
// counted in that worker's svc_runs_triggered_total, and the runs its timers end (EXPIRED) in its
// svc_runs_finished_total, each exactly once across the processes; a run task code triggers over
// HTTP is the API's to count.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSchedule, startSession, triggerRun } from "@svc/runtime/engine";
import { fileURLToPath } from "node:url";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { sample } from "../../api/test/prometheus-text.ts";
import { eventually, getRunRow, startTestEngine, type TestEngine } from "./harness.ts";
import { spawnApi, spawnWorker, type ServiceProcess } from "./processes.ts";

const METRICS_FIXTURE = fileURLToPath(new URL("./fixtures/metrics/svc.config.ts", import.meta.url));
let te: TestEngine;
const processes: ServiceProcess[] = [];
let apiUrl: string;
const workerUrls: string[] = [];

beforeAll(async () => {
  te = await startTestEngine();
  const apiPort = await freePort();
  apiUrl = `http://127.0.0.1:${apiPort}`;
  const api = spawnApi(te.db.url, apiPort);
  processes.push(api);
  await api.ready;
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const worker = spawnWorker(te.db.url, te.project.environments.dev.secretKey, METRICS_FIXTURE, { WORKER_METRICS_PORT: String(port), SERVICE_API_URL: apiUrl });
    processes.push(worker);
    workerUrls.push(`http://127.0.0.1:${port}`);
  }
  await Promise.all(processes.map((p) => p.ready));
});
afterAll(async () => {
  for (const p of processes) p.child.kill("SIGKILL");
  await Promise.all(processes.map((p) => p.exited));
  await te?.close();
});

async function scrape(base: string): Promise<string> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** A counter summed over both workers, as Prometheus' sum() would (absent: 0). */
async function workersTotal(name: string, labels: Record<string, string> = {}): Promise<number> {
  const texts = await Promise.all(workerUrls.map(scrape));
  return texts.reduce((total, text) => total + (sample(text, name, labels) ?? 0), 0);
}

async function apiTotal(name: string): Promise<number> {
  return sample(await scrape(apiUrl), name) ?? 0;
}

/** Wakes the workers' timer loops (as a trigger or a schedule change does). */
async function wakeTimers(): Promise<void> {
  await te.db.pool.query(`SELECT pg_notify('svc_timers', '')`);
}

describe("runs a worker creates and ends", () => {
  it("counts the child runs task code creates in the worker that ran it, once each; a run triggered over HTTP in the API", async () => {
    const [workersBefore, apiBefore] = [await workersTotal("svc_runs_triggered_total"), await apiTotal("svc_runs_triggered_total")];
    // Triggered by the engine directly (as a test does): counted by no process.
    const parent = await triggerRun(te.engine, te.env, "metrics-parent", { key: "metrics-keyed-child" });
    await eventually(async () => (await getRunRow(te, parent.id)).status === "COMPLETED");
    const { rows } = await te.db.pool.query<{ trigger_function: string | null; n: number }>(
      `SELECT trigger_function, count(*)::int AS n FROM runs WHERE parent_run_id = $1 GROUP BY 1 ORDER BY 1`,
      [parent.id],
    );
    // triggerAndWait: 1, then the keyed one (its second call found it); batchTriggerAndWait: 2; tasks.trigger: 1.
    expect(rows).toEqual([
      { trigger_function: "batchTriggerAndWait", n: 2 },
      { trigger_function: "trigger", n: 1 },
      { trigger_function: "triggerAndWait", n: 2 },
    ]);
    expect(await workersTotal("svc_runs_triggered_total")).toBe(workersBefore + 4);
    expect(await apiTotal("svc_runs_triggered_total")).toBe(apiBefore + 1);
  });

  it("counts a scheduled run in the worker whose timers fired it, once across the workers", async () => {
    const before = await workersTotal("svc_runs_triggered_total");
    const { schedule } = await createSchedule(te.engine, te.env, { task: "metrics-scheduled", cron: "0 0 1 1 *" });
    // Due now rather than next New Year: both workers' timer loops race for it.
    await te.db.pool.query(`UPDATE schedules SET next_run_at = now() - interval '1 second' WHERE id = $1`, [schedule.id]);
    await wakeTimers();
    const runId = await eventually(async () => (await te.db.pool.query(`SELECT id FROM runs WHERE schedule_id = $1`, [schedule.id])).rows[0]?.id as string | undefined);
    await eventually(async () => (await getRunRow(te, runId)).status === "COMPLETED");
    await eventually(async () => (await workersTotal("svc_runs_triggered_total")) === before + 1);
    const { rows } = await te.db.pool.query(`SELECT count(*)::int AS n FROM runs WHERE schedule_id = $1`, [schedule.id]);
    expect(rows[0].n).toBe(1);
  });

  it("counts the next run a session's task code hands over to", async () => {
    const before = await workersTotal("svc_runs_triggered_total");
    const { session, runId } = await startSession(te.engine, te.env, { type: "chat.agent", taskIdentifier: "metrics-session", triggerConfig: { basePayload: {} } });
    await eventually(async () => (await getRunRow(te, runId)).status === "COMPLETED");
    const { rows } = await te.db.pool.query<{ run_id: string; reason: string }>(`SELECT run_id, reason FROM session_runs WHERE session_id = $1 ORDER BY created_at`, [session.id]);
    expect(rows.map((r) => r.reason)).toEqual(["create", "continue"]);
    await eventually(async () => (await getRunRow(te, rows[1]!.run_id)).status === "COMPLETED");
    expect(await workersTotal("svc_runs_triggered_total")).toBe(before + 1);
  });

  it("counts a run its TTL expired once, in the worker whose timers expired it", async () => {
    for (const [i, expected] of [[1, 1], [2, 2]] as const) {
      // A task no worker has: the run stays QUEUED until its TTL passes.
      const run = await triggerRun(te.engine, te.env, "metrics-nobody", { i }, { ttl: "1h" });
      await te.db.pool.query(`UPDATE runs SET expire_at = now() - interval '1 second' WHERE id = $1`, [run.id]);
      await wakeTimers();
      await eventually(async () => (await getRunRow(te, run.id)).status === "EXPIRED");
      await eventually(async () => (await workersTotal("svc_runs_finished_total", { status: "EXPIRED" })) >= expected);
      expect(await workersTotal("svc_runs_finished_total", { status: "EXPIRED" })).toBe(expected);
    }
  });
});
