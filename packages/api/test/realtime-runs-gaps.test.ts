// The two ways a live realtime request could miss a notice, and how it still gets the change:
// a writer that checked for a watch just before the environment's first subscriber registered it,
// and the process's LISTEN connection dropping while a change commits.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startListeningApi, type ListeningApi } from "./client-server.ts";
import { triggerTask } from "./runs-fixtures.ts";

let api: ListeningApi;
beforeAll(async () => {
  // Long enough that an answer with the change cannot be the long poll's end.
  api = await startListeningApi({ limits: { realtimeLivePollMs: 15_000 } });
});
afterAll(async () => api?.close());

const ELECTRIC = { "x-trigger-electric-version": "1.0.0-beta.1", "x-trigger-api-version": "2025-07-16" };

async function shape(path: string, params: Record<string, string> = {}) {
  const url = new URL(path, api.baseURL);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const res = await fetch(url, { headers: { ...ELECTRIC, ...api.devAuth } });
  const body = (await res.json()) as { key?: string; value?: Record<string, string | null> }[];
  return { status: res.status, offset: res.headers.get("electric-offset")!, handle: res.headers.get("electric-handle")!, rows: body.filter((m) => m.key).map((m) => m.value!) };
}

async function listenerPid(): Promise<number> {
  const { rows } = await api.db.pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc-api-listen'`);
  expect(rows).toHaveLength(1);
  return rows[0]!.pid;
}

describe("live realtime requests across gaps in the notices", () => {
  it("get a change whose writer did not see the watch yet: once that writer has ended, subscribers read again", async () => {
    const runId = await triggerTask(api, { payload: {} });
    const first = await shape(`/realtime/v1/runs/${runId}`);
    expect(api.deps.runChanges!.watches.environments).toEqual([]);
    // A writer changes the run before anyone watches the environment (its trigger sends nothing)
    // and commits only after the first live request registered the watch and read.
    const writer = await api.db.pool.connect();
    try {
      await writer.query("BEGIN");
      await writer.query(`UPDATE runs SET metadata = '{"raced":true}' WHERE id = $1`, [runId]);
      const live = shape(`/realtime/v1/runs/${runId}`, { offset: first.offset, handle: first.handle, live: "true" });
      await expect.poll(() => api.deps.runChanges!.size, { timeout: 5000, interval: 10 }).toBe(1);
      await expect.poll(async () => (await api.db.pool.query(`SELECT count(*)::int AS n FROM realtime_watches`)).rows[0].n, { timeout: 5000, interval: 10 }).toBe(1);
      await writer.query("COMMIT");
      const answer = await live;
      expect(answer.rows).toEqual([expect.objectContaining({ id: runId, metadata: '{"raced":true}' })]);
    } finally {
      writer.release();
    }
  });

  it("get a change committed while the LISTEN connection was down: on reconnect every subscriber reads again", async () => {
    const runId = await triggerTask(api, { payload: {} });
    const first = await shape(`/realtime/v1/runs/${runId}`);
    const live = shape(`/realtime/v1/runs/${runId}`, { offset: first.offset, handle: first.handle, live: "true" });
    await expect.poll(() => api.deps.runChanges!.size, { timeout: 5000, interval: 10 }).toBe(1);
    // Settled: the wake-up that follows a registration is past, the one below is the reconnect's.
    await expect.poll(() => api.deps.runChanges!.watches.isSettled(api.env.id), { timeout: 10_000, interval: 10 }).toBe(true);
    // The change commits while the listener's connection is gone (it reconnects after 100 ms at
    // the earliest): nobody LISTENs to receive its notice.
    const pid = await listenerPid();
    const writer = await api.db.pool.connect();
    try {
      await writer.query("BEGIN");
      await writer.query(`UPDATE runs SET metadata = '{"lost":"notice"}' WHERE id = $1`, [runId]);
      await api.db.pool.query(`SELECT pg_terminate_backend($1)`, [pid]);
      await expect.poll(async () => (await api.db.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1`, [pid])).rows[0].n, { timeout: 5000, interval: 5 }).toBe(0);
      await writer.query("COMMIT");
    } finally {
      writer.release();
    }
    const answer = await live;
    expect(answer.rows).toEqual([expect.objectContaining({ id: runId, metadata: '{"lost":"notice"}' })]);
    await expect.poll(async () => (await listenerPid()) !== pid, { timeout: 10_000, interval: 50 }).toBe(true);
  });
});
