import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getEnvironment } from "@svc/runtime/engine";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

async function createBatch(body: unknown, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url: "/api/v3/batches", headers, payload: body as object });
}

/** `n` distinct 3-byte characters (poorly compressible, as real hashed or random keys are). */
const cjk = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join("");

const ndjson = (items: unknown[]) => items.map((item) => JSON.stringify(item)).join("\n") + "\n";

async function sendItems(batchId: string, body: string, headers: Record<string, string> = api.devAuth, contentType = "application/x-ndjson") {
  return api.app.inject({ method: "POST", url: `/api/v3/batches/${batchId}/items`, headers: { ...headers, "content-type": contentType }, payload: body });
}

async function batchRuns(batchId: string) {
  const { rows } = await api.db.pool.query(
    `SELECT id, batch_index, task_identifier, trigger_function, payload, tags FROM runs WHERE batch_id = $1 ORDER BY batch_index`,
    [batchId],
  );
  return rows;
}

const item = (index: number, extra: Record<string, unknown> = {}) => ({ index, task: "hello-world", payload: `{"json":{"i":${index}}}`, options: { payloadType: "application/super+json" }, ...extra });

describe("POST /api/v3/batches", () => {
  it("creates a batch (202) with a read:batch public token, and returns the same batch for the same idempotency key", async () => {
    const body = { runCount: 2, taskIdentifiers: ["hello-world"], idempotencyKey: "8f58154653", idempotencyKeyOptions: { key: "batch-1", scope: "run" } };
    const first = await createBatch(body);
    expect(first.statusCode).toBe(202);
    expect(first.json()).toMatchObject({ runCount: 2, isCached: false, idempotencyKey: "batch-1" });
    expect(first.json().id).toMatch(/^batch_/);
    expect(first.headers["x-trigger-jwt"]).toBeTypeOf("string");
    const second = await createBatch(body);
    expect(second.statusCode).toBe(202);
    expect(second.json()).toEqual({ ...first.json(), isCached: true });
    const other = await createBatch({ runCount: 2 });
    expect(other.json().id).not.toBe(first.json().id);
    expect(other.json()).not.toHaveProperty("idempotencyKey");
  });

  it("rejects a runCount outside 1..1000, a missing body and an unknown parent with 4xx", async () => {
    for (const runCount of [0, 1001, 1.5, "2"]) {
      const res = await createBatch({ runCount });
      expect(res.statusCode, String(runCount)).toBe(400);
      expect(res.json().error).toMatch(/runCount/);
    }
    const empty = await api.app.inject({ method: "POST", url: "/api/v3/batches", headers: { ...api.devAuth, "content-type": "application/json" } });
    expect(empty.statusCode).toBe(400);
    const parent = await createBatch({ runCount: 1, parentRunId: "run_missing" });
    expect(parent.statusCode).toBe(422);
    expect(parent.json().error).toMatch(/parentRunId/);
    expect((await createBatch({ runCount: 1 }, {})).statusCode).toBe(401);
  });

  it("refuses an idempotency key Postgres cannot index or store as sent with 400", async () => {
    // 2048 CJK characters are 6 kB in UTF-8, past the btree entry limit (was a 500).
    const wide = await createBatch({ runCount: 1, idempotencyKey: cjk(2048) });
    expect(wide.statusCode).toBe(400);
    expect(wide.json().error).toMatch(/idempotencyKey: must be 2048 bytes or less in UTF-8/);
    // Half a surrogate pair used to be stored (and answered) as U+FFFD.
    const half = await createBatch({ runCount: 1, idempotencyKey: "batch-\ud83d" });
    expect(half.statusCode).toBe(400);
    expect(half.json().error).toMatch(/idempotencyKey: must be valid Unicode/);
    const v2 = await api.app.inject({ method: "POST", url: "/api/v2/tasks/batch", headers: api.devAuth, payload: { items: [{ task: "hello-world", options: { idempotencyKey: cjk(2048) } }] } });
    expect(v2.statusCode).toBe(400);
    expect(v2.json().error).toMatch(/items\.0\.options\.idempotencyKey: must be 2048 bytes or less/);
    expect((await createBatch({ runCount: 1, idempotencyKey: cjk(682) })).statusCode).toBe(202);
  });
});

describe("POST /api/v3/batches/{id}/items", () => {
  it("triggers one run per item, reports sealed:false while items are missing, and de-duplicates re-sent indexes", async () => {
    const { id } = (await createBatch({ runCount: 3 })).json();
    const partial = await sendItems(id, ndjson([item(0), item(2, { options: { tags: ["t"], payloadType: "application/super+json" } })]));
    expect(partial.statusCode).toBe(200);
    expect(partial.json()).toEqual({ id, itemsAccepted: 2, itemsDeduplicated: 0, sealed: false, enqueuedCount: 2, expectedCount: 3 });

    const all = await sendItems(id, ndjson([item(0), item(1), item(2)]));
    expect(all.json()).toEqual({ id, itemsAccepted: 1, itemsDeduplicated: 2, sealed: true, enqueuedCount: 3, expectedCount: 3 });
    const runs = await batchRuns(id);
    expect(runs.map((r) => [r.batch_index, r.trigger_function, r.payload])).toEqual([
      [0, "batchTrigger", '{"json":{"i":0}}'],
      [1, "batchTrigger", '{"json":{"i":1}}'],
      [2, "batchTrigger", '{"json":{"i":2}}'],
    ]);
    expect(runs[2].tags).toEqual(["t"]);

    const again = await sendItems(id, ndjson([item(1)]));
    expect(again.json()).toMatchObject({ itemsAccepted: 0, itemsDeduplicated: 1, sealed: true });
    expect(await batchRuns(id)).toHaveLength(3);
  });

  it("counts a repeated index inside one request once", async () => {
    const { id } = (await createBatch({ runCount: 1 })).json();
    const res = await sendItems(id, ndjson([item(0), item(0)]));
    expect(res.json()).toMatchObject({ itemsAccepted: 1, itemsDeduplicated: 1, sealed: true });
    expect(await batchRuns(id)).toHaveLength(1);
  });

  it("seals when an item's idempotency key returns a run that already existed", async () => {
    const existing = await api.app.inject({
      method: "POST",
      url: "/api/v1/tasks/hello-world/trigger",
      headers: api.devAuth,
      payload: { payload: 1, options: { idempotencyKey: "shared-key" } },
    });
    const { id } = (await createBatch({ runCount: 2 })).json();
    const res = await sendItems(id, ndjson([item(0, { options: { idempotencyKey: "shared-key" } }), item(1)]));
    expect(res.json()).toMatchObject({ itemsAccepted: 2, sealed: true });
    const runs = await batchRuns(id);
    expect(runs.map((r) => r.batch_index)).toEqual([1]);
    expect(runs.map((r) => r.id)).not.toContain(existing.json().id);

    // The batch lists the existing run at its item's index, and waits for it to finish too.
    const retrieved = await api.app.inject({ method: "GET", url: `/api/v2/batches/${id}`, headers: api.devAuth });
    expect(retrieved.json()).toMatchObject({ status: "PENDING", runCount: 2, runs: [existing.json().id, runs[0].id] });
    await api.db.pool.query(`UPDATE runs SET status = 'COMPLETED' WHERE id = $1`, [runs[0].id]);
    expect((await api.app.inject({ method: "GET", url: `/api/v2/batches/${id}`, headers: api.devAuth })).json().status).toBe("PENDING");
    await api.db.pool.query(`UPDATE runs SET status = 'COMPLETED' WHERE id = $1`, [existing.json().id]);
    expect((await api.app.inject({ method: "GET", url: `/api/v2/batches/${id}`, headers: api.devAuth })).json().status).toBe("COMPLETED");
    // Re-sending the item is deduplicated by its index like any other.
    expect((await sendItems(id, ndjson([item(0, { options: { idempotencyKey: "shared-key" } })]))).json()).toMatchObject({ itemsAccepted: 0, itemsDeduplicated: 1 });
  });

  it("a one-call batch lists a run an item's idempotency key answered with, in item order", async () => {
    const existing = await api.app.inject({ method: "POST", url: "/api/v1/tasks/hello-world/trigger", headers: api.devAuth, payload: { payload: 1, options: { idempotencyKey: "one-call-key" } } });
    const res = await api.app.inject({
      method: "POST",
      url: "/api/v2/tasks/batch",
      headers: api.devAuth,
      payload: { items: [{ task: "c" }, { task: "hello-world", payload: 1, options: { idempotencyKey: "one-call-key" } }, { task: "d" }] },
    });
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body.runs[1]).toBe(existing.json().id);
    const retrieved = await api.app.inject({ method: "GET", url: `/api/v2/batches/${body.id}`, headers: api.devAuth });
    expect(retrieved.json()).toMatchObject({ runCount: 3, runs: body.runs });
  });

  it("answers bad input with 4xx and creates nothing", async () => {
    const { id } = (await createBatch({ runCount: 2 })).json();
    const json = await sendItems(id, JSON.stringify(item(0)), api.devAuth, "application/json");
    expect(json.statusCode).toBe(415);
    expect(json.json().error).toMatch(/application\/x-ndjson/);
    const text = await sendItems(id, ndjson([item(0)]), api.devAuth, "text/plain");
    expect(text.statusCode).toBe(415);
    const noType = await api.app.inject({ method: "POST", url: `/api/v3/batches/${id}/items`, headers: api.devAuth, payload: ndjson([item(0)]) });
    expect(noType.statusCode).toBe(415);

    const malformed = await sendItems(id, `${JSON.stringify(item(0))}\n{"index":1,"task":\n`);
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error).toMatch(/^line 2: /);
    const missingTask = await sendItems(id, `\n${JSON.stringify({ index: 1 })}\n`);
    expect(missingTask.statusCode).toBe(400);
    expect(missingTask.json().error).toMatch(/^line 2: task/);
    const negative = await sendItems(id, ndjson([{ index: -1, task: "x" }]));
    expect(negative.statusCode).toBe(400);

    const outOfRange = await sendItems(id, ndjson([item(0), item(2)]));
    expect(outOfRange.statusCode).toBe(400);
    expect(outOfRange.json().error).toMatch(/index 2 is out of range/);

    const badOption = await sendItems(id, ndjson([item(0), item(1, { options: { delay: "soonish" } })]));
    expect(badOption.statusCode).toBe(400);
    expect(badOption.json().error).toMatch(/item 1 .*delay/);

    const nul = await sendItems(id, ndjson([item(0, { options: { tags: ["a\u0000"] } })]));
    expect(nul.statusCode).toBe(400);
    expect(nul.json().error).toMatch(/NUL/);

    const empty = await sendItems(id, "");
    expect(empty.statusCode).toBe(400);
    expect(await batchRuns(id)).toHaveLength(0);

    expect((await sendItems("batch_missing", ndjson([item(0)]))).statusCode).toBe(404);
    const otherEnv = await sendItems(id, ndjson([item(0)]), { authorization: `Bearer ${api.project.environments.prod.secretKey}` });
    expect(otherEnv.statusCode).toBe(404);
    expect(otherEnv.json()).toEqual({ error: "Batch not found" });
  });

  it("checks batchTrigger scopes of public tokens for every task", async () => {
    const env = (await getEnvironment(api.db.pool, api.project.environments.dev.id))!;
    const token = { authorization: `Bearer ${await mintPublicToken(api.deps, env, ["batchTrigger:tasks:hello-world"])}` };
    const created = await createBatch({ runCount: 1, taskIdentifiers: ["hello-world"] }, token);
    expect(created.statusCode).toBe(202);
    expect((await createBatch({ runCount: 1, taskIdentifiers: ["hello-world", "other"] }, token)).statusCode).toBe(403);
    expect((await createBatch({ runCount: 1 }, token)).statusCode).toBe(403);
    expect((await sendItems(created.json().id, ndjson([{ ...item(0), task: "other" }]), token)).statusCode).toBe(403);
    expect((await sendItems(created.json().id, ndjson([item(0)]), token)).json()).toMatchObject({ sealed: true });
  });
});

describe("POST /api/v2/tasks/batch and GET /api/v2/batches/{id}", () => {
  it("triggers every item in one call and reports the batch PENDING until its runs finish", async () => {
    const res = await api.app.inject({
      method: "POST",
      url: "/api/v2/tasks/batch",
      headers: api.devAuth,
      payload: { items: [{ task: "a", payload: { n: 1 } }, { task: "b", payload: { n: 2 }, options: { tags: ["v2"] } }] },
    });
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body).toMatchObject({ runCount: 2 });
    expect(body.runs).toHaveLength(2);
    expect(res.headers["x-trigger-jwt"]).toBeTypeOf("string");
    const runs = await batchRuns(body.id);
    expect(runs.map((r) => [r.id, r.task_identifier, r.batch_index])).toEqual([
      [body.runs[0], "a", 0],
      [body.runs[1], "b", 1],
    ]);

    const pending = await api.app.inject({ method: "GET", url: `/api/v2/batches/${body.id}`, headers: api.devAuth });
    expect(pending.statusCode).toBe(200);
    expect(pending.json()).toMatchObject({ id: body.id, status: "PENDING", runCount: 2, runs: body.runs });
    expect(pending.json()).not.toHaveProperty("idempotencyKey");
    await api.db.pool.query(`UPDATE runs SET status = 'COMPLETED' WHERE batch_id = $1`, [body.id]);
    const done = await api.app.inject({ method: "GET", url: `/api/v2/batches/${body.id}`, headers: api.devAuth });
    expect(done.json().status).toBe("COMPLETED");
    const filtered = await api.app.inject({ method: "GET", url: `/api/v1/runs?filter[batch]=${body.id}`, headers: api.devAuth });
    expect(filtered.json().data.map((r: { id: string }) => r.id).sort()).toEqual([...body.runs].sort());
  });

  it("rejects an empty batch, more than 500 items and bad items with 400", async () => {
    const post = (payload: unknown) => api.app.inject({ method: "POST", url: "/api/v2/tasks/batch", headers: api.devAuth, payload: payload as object });
    const empty = await post({ items: [] });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toMatch(/at least one item/);
    const tooMany = await post({ items: Array.from({ length: 501 }, () => ({ task: "a" })) });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().error).toMatch(/at most 500/);
    const badTags = await post({ items: [{ task: "a" }, { task: "b", options: { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) } }] });
    expect(badTags.statusCode).toBe(422);
    expect(badTags.json().error).toMatch(/item 1/);
    const { rows } = await api.db.pool.query(`SELECT count(*)::int AS n FROM runs WHERE task_identifier = 'a'`);
    expect(rows[0].n).toBe(1); // only the first test's run: the failed batch rolled back
  });

  it("answers 404 for unknown and other-environment batches", async () => {
    expect((await api.app.inject({ method: "GET", url: "/api/v2/batches/batch_nope", headers: api.devAuth })).statusCode).toBe(404);
    const { id } = (await createBatch({ runCount: 1 })).json();
    const other = await api.app.inject({ method: "GET", url: `/api/v2/batches/${id}`, headers: { authorization: `Bearer ${api.project.environments.prod.secretKey}` } });
    expect(other.statusCode).toBe(404);
  });
});
