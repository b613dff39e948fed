import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient } from "@trigger.dev/core/v3";
import { configure, runs, tasks } from "@trigger.dev/sdk";
import { startTestApi, type TestApi } from "./harness.ts";

// The trigger body's `gates` over HTTP against svc on a real port. @trigger.dev/sdk 4.8.3's
// tasks.trigger and batchTrigger send no `gates` (Trigger.dev resolves a task's declared limits into
// gates on its server), so a trigger and a streamed batch with gates go through the published API
// client underneath them (@trigger.dev/core's ApiClient), a v2 batch as raw HTTP; a replay is the
// SDK's runs.replay. That the claims obey gates is tested with workers in
// packages/worker/test/gates.test.ts.
let api: TestApi;
let baseURL: string;
let secretKey: string;
let client: ApiClient;
beforeAll(async () => {
  api = await startTestApi();
  baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  secretKey = api.project.environments.dev.secretKey;
  configure({ baseURL, secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  client = new ApiClient(baseURL, secretKey, undefined, { retry: { maxAttempts: 1 } });
});
afterAll(async () => api?.close());

async function send(method: string, path: string, body?: unknown): Promise<{ status: number; body: { error?: string; id?: string; runs?: string[] } }> {
  const response = await fetch(`${baseURL}${path}`, {
    method,
    headers: { authorization: `Bearer ${secretKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as { error?: string } };
}

async function stored(ids: string[]): Promise<{ gates: unknown; claim_from_runs: boolean }[]> {
  const { rows } = await api.db.pool.query<{ id: string; gates: unknown; claim_from_runs: boolean }>(
    `SELECT id, gates, claim_from_runs FROM runs WHERE id = ANY ($1::text[])`,
    [ids],
  );
  return ids.map((id) => {
    const { gates, claim_from_runs } = rows.find((r) => r.id === id)!;
    return { gates, claim_from_runs };
  });
}

describe("gates with @trigger.dev/core 4.8.3's API client and @trigger.dev/sdk 4.8.3", () => {
  it("a trigger stores its gates distinct, in the order given, and gives the run to its queue's limited claim", async () => {
    const run = await client.triggerTask("gt-task", {
      payload: {},
      options: { gates: [{ queue: "emails", concurrencyKey: "tenant-1" }, { queue: "billing" }, { queue: "emails", concurrencyKey: "tenant-1" }] },
    });
    expect(run.id).toMatch(/^run_/);
    expect(await stored([run.id])).toEqual([{ gates: [{ queue: "emails", concurrencyKey: "tenant-1" }, { queue: "billing" }], claim_from_runs: false }]);
    // An empty list is none: a plain run, claimed by the plain claim.
    const plain = await client.triggerTask("gt-task", { payload: {}, options: { gates: [] } });
    expect(await stored([plain.id])).toEqual([{ gates: null, claim_from_runs: true }]);
    // And the SDK's own trigger, which sends no gates, makes a plain run.
    const sdk = await tasks.trigger("gt-task", {});
    expect(await stored([sdk.id])).toEqual([{ gates: null, claim_from_runs: true }]);
  });

  it("a batch item has its own gates, streamed (v3) or in one call (v2)", async () => {
    const batch = await client.createBatch({ runCount: 2 });
    await client.streamBatchItems(batch.id, [
      { index: 0, task: "gt-task", payload: "{}", options: { payloadType: "application/json", gates: [{ queue: "emails" }] } },
      { index: 1, task: "gt-task", payload: "{}", options: { payloadType: "application/json" } },
    ]);
    const streamed = await api.db.pool.query<{ id: string }>(`SELECT id FROM runs WHERE batch_id = $1 ORDER BY batch_index`, [batch.id]);
    expect(await stored(streamed.rows.map((r) => r.id))).toEqual([
      { gates: [{ queue: "emails" }], claim_from_runs: false },
      { gates: null, claim_from_runs: true },
    ]);

    const v2 = await send("POST", "/api/v2/tasks/batch", {
      items: [{ task: "gt-task", payload: {}, options: { gates: [{ queue: "emails", concurrencyKey: "k" }] } }, { task: "gt-task", payload: {} }],
    });
    expect(v2.status).toBe(202);
    expect(await stored(v2.body.runs!)).toEqual([
      { gates: [{ queue: "emails", concurrencyKey: "k" }], claim_from_runs: false },
      { gates: null, claim_from_runs: true },
    ]);
  });

  it("a replay keeps its run's gates", async () => {
    const run = await client.triggerTask("gt-task", { payload: { n: 1 }, options: { gates: [{ queue: "emails", concurrencyKey: "tenant-2" }] } });
    const replayed = await runs.replay(run.id);
    expect(await stored([replayed.id])).toEqual([{ gates: [{ queue: "emails", concurrencyKey: "tenant-2" }], claim_from_runs: false }]);
  });

  it("refuses gates of a bad shape with a 400 that says why, and stores nothing", async () => {
    const { rows: before } = await api.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs`);
    const bad: unknown[] = [
      [{ queue: "a" }, { queue: "b" }, { queue: "c" }, { queue: "d" }],
      [{ concurrencyKey: "k" }],
      [{ queue: "" }],
      [{ queue: "q".repeat(129) }],
      [{ queue: "a", concurrencyKey: "" }],
      [{ queue: "a", concurrencyKey: "k".repeat(129) }],
      [{ queue: "a", concurrencyKey: 5 }],
      [{ queue: "a", concurencyKey: "typo" }],
      [{ queue: 5 }],
      ["a"],
      { queue: "a" },
      "a",
    ];
    for (const gates of bad) {
      const answer = await send("POST", "/api/v1/tasks/gt-task/trigger", { payload: {}, options: { gates } });
      expect(answer.status, JSON.stringify(gates)).toBe(400);
      expect(answer.body.error, JSON.stringify(gates)).toMatch(/gates/);
      const item = await send("POST", "/api/v2/tasks/batch", { items: [{ task: "gt-task", payload: {}, options: { gates } }] });
      expect(item.status, `batch item ${JSON.stringify(gates)}`).toBe(400);
    }
    const four = await send("POST", "/api/v1/tasks/gt-task/trigger", { payload: {}, options: { gates: bad[0] } });
    expect(four.body.error).toContain("at most 3 gates");
    const { rows: after } = await api.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs`);
    expect(after[0]!.n).toBe(before[0]!.n);
  });
});
