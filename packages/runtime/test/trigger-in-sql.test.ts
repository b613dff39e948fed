// svc_trigger (sql/functions/svc_trigger_run.sql) against the engine's trigger (engine/runs/trigger.ts):
// the same input makes the same run row either way, and what one refuses the other refuses. This is
// what keeps the two from drifting: a change to plan-run.ts that svc_trigger_run does not follow
// fails here.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDuration, triggerRun, withTransaction } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { TriggerOptions } from "../src/contracts/trigger.ts";
import { freesIdempotencyKey, RUN_STATUSES } from "../src/engine/runs/statuses.ts";

let te: TestEngine;
beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => te?.close());

/** Columns that must be equal, and the times that must be equally far from created_at. */
const SAME = [
  "environment_id", "project_id", "task_identifier", "status", "queue_name", "concurrency_key", "payload_type", "idempotency_key",
  "idempotency_key_user", "idempotency_key_scope", "tags", "metadata", "max_attempts", "max_duration_s", "ttl", "parent_run_id",
  "root_run_id", "depth", "trigger_function", "batch_id", "batch_index", "schedule_id", "is_test", "attempt_number", "claim_token",
  "worker_id", "worker_version", "lease_expires_at", "offered_at", "offered_start", "started_at", "claim_from_runs", "ledger_epoch",
  "available_at", "debounce_key", "list_status", "rate_limit_key", "concurrency_limits", "gates", "rate_limit", "rate_period_ms",
] as const;
const RELATIVE = ["idempotency_key_expires_at", "expire_at", "delay_until"] as const;

async function row(id: string): Promise<Record<string, unknown>> {
  const { rows } = await te.db.pool.query(`SELECT * FROM runs WHERE id = $1`, [id]);
  const run = rows[0] as Record<string, unknown> & { created_at: Date; payload: string | null };
  const out: Record<string, unknown> = {};
  for (const c of SAME) out[c] = run[c];
  for (const c of RELATIVE) out[c] = run[c] === null ? null : Math.round(((run[c] as Date).getTime() - run.created_at.getTime()) / 1000);
  out.payload = run.payload === null ? null : JSON.parse(run.payload);
  out.run_tags = (await te.db.pool.query(`SELECT tag FROM run_tags WHERE run_id = $1 ORDER BY tag`, [id])).rows.map((r) => r.tag);
  return out;
}

async function viaSql(task: string, payload: unknown, options: Record<string, unknown>): Promise<{ run_id: string; is_cached: boolean }> {
  const { rows } = await te.db.pool.query(`SELECT * FROM svc_trigger($1, $2, $3::jsonb, $4::jsonb)`, [
    te.env.id, task, payload === undefined ? null : JSON.stringify(payload), JSON.stringify(options),
  ]);
  return rows[0];
}

/** The engine's trigger, with the options as the HTTP body sends them. */
async function viaEngine(task: string, payload: unknown, options: Record<string, unknown>) {
  return triggerRun(te.engine, te.env, task, payload, options as TriggerOptions);
}

const CASES: [string, unknown, Record<string, unknown>][] = [
  ["plain", { order: 42, items: ["a", "b"] }, {}],
  ["no payload", undefined, {}],
  ["tags", { n: 1 }, { tags: [" b ", "a", "b", ""] }],
  ["one tag", 7, { tags: "solo" }],
  ["delay", { n: 1 }, { delay: "1h30m" }],
  ["ttl", { n: 1 }, { ttl: "10m" }],
  ["ttl in seconds, delayed", { n: 1 }, { ttl: 90, delay: "2d" }],
  ["queue and concurrency key", "text", { queue: { name: "billing" }, concurrencyKey: "user-1" }],
  ["numeric concurrency key", null, { concurrencyKey: 7 }],
  ["rate key", { n: 1 }, { rateLimit: { key: "customer-9" } }],
  ["numeric rate key", { n: 1 }, { rateLimit: { key: 9 } }],
  ["a run's own rate", { n: 1 }, { rateLimit: { key: "customer-9", limit: 5, period: "1m30s" } }],
  ["a run's own rate in milliseconds, no key", { n: 1 }, { rateLimit: { limit: 1, period: 1500 } }],
  ["named concurrency limits", { n: 1 }, { concurrency: ["zeta", "openai"], concurrencyKey: "u" }],
  ["no named concurrency limit", { n: 1 }, { concurrency: [] }],
  ["gates", { n: 1 }, { gates: [{ queue: "emails", concurrencyKey: "k" }, { queue: "billing" }, { queue: "emails", concurrencyKey: "k" }] }],
  ["a gate with a null key", { n: 1 }, { gates: [{ queue: "emails", concurrencyKey: null }, { queue: "emails" }] }],
  ["no gates", { n: 1 }, { gates: [] }],
  ["limits", [1, 2], { maxAttempts: 3, maxDuration: 60, test: true }],
  ["metadata", { n: 1 }, { metadata: { source: "db", nested: { a: [1, null] } } }],
  ["idempotency key with TTL", { n: 1 }, { idempotencyKey: "k", idempotencyKeyTTL: "1h" }],
  ["idempotency key", { n: 1 }, { idempotencyKey: "k2" }],
];

describe("svc_trigger makes the run the engine's trigger makes", () => {
  for (const [name, payload, options] of CASES) {
    it(name, async () => {
      // Each way in a task of its own, so that idempotency keys do not meet.
      const engine = await viaEngine(`same-${name}-e`, payload, options);
      const sql = await viaSql(`same-${name}-s`, payload, options);
      const [a, b] = [await row(engine.id), await row(sql.run_id)];
      expect({ ...b, task_identifier: "", queue_name: String(b.queue_name).replace(/-s$/, "") }).toEqual({
        ...a, task_identifier: "", queue_name: String(a.queue_name).replace(/-e$/, ""),
      });
      expect(sql.run_id).toMatch(/^run_[0-9a-z]{21}$/);
    });
  }

  it("gives the run the limits its task declares, a trigger's names replacing the named ones but not the inline one", async () => {
    for (const way of ["e", "s"]) {
      await te.db.pool.query(
        `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version, concurrency_limits) VALUES ($1, $2, $3, 'v1', $4)`,
        [te.env.id, `declaring-${way}`, `task/declaring-${way}`, ["openai", `task/declaring-${way}`]],
      );
      await te.db.pool.query(
        `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version, concurrency_limits) VALUES ($1, $2, 'shared', 'v1', $3)`,
        [te.env.id, `named-only-${way}`, ["openai"]],
      );
    }
    const limitsOf = async (id: string) => (await te.db.pool.query(`SELECT concurrency_limits, claim_from_runs FROM runs WHERE id = $1`, [id])).rows[0];
    for (const [task, options, expected] of [
      ["declaring", {}, ["openai", "task/declaring-%"]],
      ["declaring", { concurrency: ["zeta"] }, ["zeta", "task/declaring-%"]],
      ["named-only", {}, ["openai"]],
      ["named-only", { concurrency: ["zeta", "anthropic"] }, ["anthropic", "zeta"]],
    ] as const) {
      const engine = await limitsOf((await viaEngine(`${task}-e`, { n: 1 }, options)).id);
      const sql = await limitsOf((await viaSql(`${task}-s`, { n: 1 }, options)).run_id);
      expect(engine).toEqual({ concurrency_limits: expected.map((l) => l.replace("%", "e")), claim_from_runs: false });
      expect(sql).toEqual({ concurrency_limits: expected.map((l) => l.replace("%", "s")), claim_from_runs: false });
    }
  });

  it("takes every option of the HTTP trigger but those it names as needing the HTTP API, and each is compared above", () => {
    // A new option of the HTTP trigger fails here until svc_trigger_run takes it (and a case above
    // compares it) or it joins this list, with its reason.
    const httpOnly = {
      payloadType: "svc_trigger takes JSON (jsonb)",
      payloadSize: "a hint for uploaded payloads",
      idempotencyKeyOptions: "the SDK's scoped keys; the key as given is the user key",
      metadataType: "metadata is JSON",
      machine: "ignored over HTTP too",
      priority: "ignored over HTTP too",
      lockToVersion: "ignored over HTTP too",
      parentRunId: "child runs are triggered by task code, over HTTP",
      resumeParentOnCompletion: "child runs",
      parentBatch: "child runs",
      debounce: "needs the key's lock and a window decision (debounce.ts)",
    };
    const taken = ["idempotencyKey", "idempotencyKeyTTL", "delay", "ttl", "tags", "metadata", "maxAttempts", "maxDuration", "queue", "concurrencyKey", "rateLimit", "concurrency", "gates", "test"];
    expect(Object.keys(TriggerOptions.shape).sort()).toEqual([...taken, ...Object.keys(httpOnly)].sort());
    const compared = new Set(CASES.flatMap(([, , options]) => Object.keys(options)));
    expect(taken.filter((option) => !compared.has(option))).toEqual([]);
  });

  it("gives a task's registered queue and whether the queue is limited, as the engine does", async () => {
    await te.db.pool.query(
      `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, worker_version) VALUES ($1, 'registered', 'shared', 2, 'v1')`,
      [te.env.id],
    );
    const engine = await viaEngine("registered", {}, {});
    const sql = await viaSql("registered", {}, {});
    expect(await row(sql.run_id)).toEqual(await row(engine.id));
    expect(await row(sql.run_id)).toMatchObject({ queue_name: "shared", claim_from_runs: false });
  });

  it("stores gates distinct, in the order given, and gives a gated run to the limited claim, both ways", async () => {
    const gates = [{ queue: "emails", concurrencyKey: "k" }, { queue: "billing", concurrencyKey: null }, { queue: "emails", concurrencyKey: "k" }];
    for (const id of [(await viaEngine("gated-e", {}, { gates })).id, (await viaSql("gated-s", {}, { gates })).run_id]) {
      expect(await row(id)).toMatchObject({ gates: [{ queue: "emails", concurrencyKey: "k" }, { queue: "billing" }], claim_from_runs: false });
    }
  });

  it("answers an idempotency key with the run that holds it, whichever way made it", async () => {
    const first = await viaEngine("idem", { n: 1 }, { idempotencyKey: "same" });
    expect(await viaSql("idem", { n: 2 }, { idempotencyKey: "same" })).toEqual({ run_id: first.id, is_cached: true });
    const second = await viaSql("idem2", { n: 1 }, { idempotencyKey: "same" });
    expect(await viaEngine("idem2", { n: 2 }, { idempotencyKey: "same" })).toMatchObject({ id: second.run_id, isCached: true });
    // A failed run frees its key, for either way.
    await te.db.pool.query(`UPDATE runs SET status = 'FAILED' WHERE id = $1`, [second.run_id]);
    const third = await viaSql("idem2", { n: 3 }, { idempotencyKey: "same" });
    expect(third.is_cached).toBe(false);
    expect(third.run_id).not.toBe(second.run_id);
  });

  it("lets the same statuses free an idempotency key as the engine does", async () => {
    // PENDING_VERSION and DEQUEUED are never stored (the first is how a QUEUED run reads).
    for (const status of RUN_STATUSES.filter((s) => s !== "PENDING_VERSION" && s !== "DEQUEUED")) {
      const holders = [];
      for (const way of ["e", "s"]) {
        const { id } = await viaEngine(`frees-${way}`, {}, { idempotencyKey: status });
        await te.db.pool.query(`UPDATE runs SET status = $2 WHERE id = $1`, [id, status]);
        holders.push(id);
      }
      const engine = await viaEngine("frees-e", {}, { idempotencyKey: status });
      const sql = await viaSql("frees-s", {}, { idempotencyKey: status });
      expect([engine.isCached, sql.is_cached], status).toEqual([!freesIdempotencyKey(status), !freesIdempotencyKey(status)]);
    }
  });

  const REFUSED: [string, Record<string, unknown>, RegExp][] = [
    ["eleven tags", { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }, /only have 10 tags/],
    ["a long tag", { tags: ["x".repeat(129)] }, /at most 128 characters/],
    ["a delay that is no duration", { delay: "soon" }, /neither a duration/],
    ["a day not on the calendar", { delay: "2027-02-30T00:00:00Z" }, /not a date on the calendar/],
    ["a TTL that is no duration", { ttl: "1 hour" }, /not a duration/],
    ["a TTL too long", { ttl: "1001000d" }, /too long/],
    ["metadata not an object", { metadata: [1] }, /metadata: must be a JSON object/],
    ["a bad idempotencyKeyTTL", { idempotencyKey: "k", idempotencyKeyTTL: "forever" }, /idempotencyKeyTTL/],
    ["three named concurrency limits", { concurrency: ["a", "b", "c"] }, /options\.concurrency: must be a list of at most 2 names/],
    ["a named concurrency limit with a space", { concurrency: ["open ai"] }, /options\.concurrency: must be a list of at most 2 names/],
    ["four gates", { gates: [{ queue: "a" }, { queue: "b" }, { queue: "c" }, { queue: "d" }] }, /options\.gates: must be a list of at most 3 gates/],
    ["a gate without a queue", { gates: [{ concurrencyKey: "k" }] }, /options\.gates: must be a list of at most 3 gates/],
    ["a gate with an empty key", { gates: [{ queue: "a", concurrencyKey: "" }] }, /options\.gates: must be a list of at most 3 gates/],
    ["a gate with a long queue", { gates: [{ queue: "q".repeat(129) }] }, /options\.gates: must be a list of at most 3 gates/],
    ["a gate with another key", { gates: [{ queue: "a", limit: 2 }] }, /options\.gates: must be a list of at most 3 gates/],
    ["a gate that is a string", { gates: ["a"] }, /options\.gates: must be a list of at most 3 gates/],
    ["gates that are an object", { gates: { queue: "a" } }, /options\.gates: must be a list of at most 3 gates/],
    ["a rate limit's limit without a period", { rateLimit: { key: "a", limit: 5 } }, /options\.rateLimit: limit and period go together/],
    ["a rate limit's period without a limit", { rateLimit: { period: "1s" } }, /options\.rateLimit: limit and period go together/],
    ["a rate limit of 0", { rateLimit: { limit: 0, period: "1s" } }, /options\.rateLimit\.limit: must be a whole number from 1 to 1,000,000/],
    ["a rate limit of 1.5", { rateLimit: { limit: 1.5, period: "1s" } }, /options\.rateLimit\.limit: must be a whole number/],
    ["a rate limit's period that is no duration", { rateLimit: { limit: 1, period: "soon" } }, /options\.rateLimit\.period: must be a duration/],
    ["a rate limit's period of 8 days", { rateLimit: { limit: 1, period: "8d" } }, /options\.rateLimit\.period: must be a duration .* from 1 ms to 7 days/],
    ["a rate limit's period of 0 ms", { rateLimit: { limit: 1, period: 0 } }, /options\.rateLimit\.period: must be a duration/],
    ["a rate limit's other key", { rateLimit: { key: "a", burst: 5 } }, /options\.rateLimit: takes key, limit and period \(got `burst`\)/],
  ];
  for (const [name, options, message] of REFUSED) {
    it(`refuses ${name} both ways`, async () => {
      await expect(viaEngine("refused", {}, options)).rejects.toThrow(message);
      await expect(viaSql("refused", {}, options)).rejects.toThrow(message);
    });
  }

  it("refuses what only the HTTP API takes, an unknown environment and a bad task id, as invalid_parameter_value", async () => {
    for (const options of [{ debounce: { key: "k", delay: "5s" } }, { parentRunId: "run_x" }, { idempotencyKeyy: "typo" }]) {
      await expect(viaSql("t", {}, options)).rejects.toMatchObject({ code: "22023", message: expect.stringMatching(/not an option of a trigger in SQL/) });
    }
    await expect(te.db.pool.query(`SELECT * FROM svc_trigger('env_nope', 't', '{}')`)).rejects.toMatchObject({ code: "22023", message: expect.stringMatching(/no environment "env_nope"/) });
    await expect(te.db.pool.query(`SELECT * FROM svc_trigger($1, '', '{}')`, [te.env.id])).rejects.toMatchObject({ code: "22023", message: "taskId: must be 1 to 128 characters" });
    await expect(te.db.pool.query(`SELECT * FROM svc_trigger($1, 't', '{}', '[1]')`, [te.env.id])).rejects.toMatchObject({ code: "22023", message: "options: must be a JSON object" });
    expect((await te.db.pool.query(`SELECT 1 FROM runs WHERE task_identifier IN ('t', 'refused')`)).rowCount).toBe(0);
  });

  it("names the environment by project ref and slug as well as by id", async () => {
    const { rows } = await te.db.pool.query(`SELECT * FROM svc_trigger($1, 'by-ref', '{}')`, [`${te.env.projectRef}/dev`]);
    expect((await row(rows[0].run_id)).environment_id).toBe(te.env.id);
    const staging = await te.db.pool.query(`SELECT * FROM svc_trigger($1, 'by-ref', '{}')`, [`${te.env.projectRef}/stg`]);
    expect((await row(staging.rows[0].run_id)).environment_id).toBe(te.project.environments.staging.id);
  });

  it("reads durations as parseDuration does", async () => {
    for (const text of ["30s", "10m", "1h30m", "2hr", "1w2d", "250ms", " 5s ", "1h 30m", "5", "s", "", "1.5h", "-1s"]) {
      const { rows } = await te.db.pool.query(`SELECT svc_parse_duration($1)::float8 AS ms`, [text]);
      expect(rows[0].ms, text).toBe(parseDuration(text));
    }
  });

  it("runs inside the caller's transaction: ROLLBACK TO SAVEPOINT takes the run back", async () => {
    const kept = await withTransaction(te.db.pool, async (tx) => {
      const { rows } = await tx.query(`SELECT * FROM svc_trigger($1, 'savepoint', '{"n":1}')`, [te.env.id]);
      await tx.query("SAVEPOINT s");
      await tx.query(`SELECT * FROM svc_trigger($1, 'savepoint', '{"n":2}', '{"tags":"gone"}')`, [te.env.id]);
      await tx.query("ROLLBACK TO SAVEPOINT s");
      return rows[0].run_id as string;
    });
    const { rows } = await te.db.pool.query(`SELECT id FROM runs WHERE task_identifier = 'savepoint'`);
    expect(rows.map((r) => r.id)).toEqual([kept]);
    expect((await te.db.pool.query(`SELECT 1 FROM run_tags WHERE tag = 'gone'`)).rowCount).toBe(0);
  });
});

describe("svc_batch_trigger", () => {
  it("makes a sealed batch whose runs are the engine's, in item order", async () => {
    const { rows } = await te.db.pool.query(`SELECT * FROM svc_batch_trigger($1, $2::jsonb)`, [
      te.env.id, JSON.stringify([{ task: "b1", payload: { i: 0 } }, { task: "b2", payload: { i: 1 }, options: { tags: "x", delay: "1h" } }]),
    ]);
    const { batch_id, run_ids, is_cached } = rows[0];
    expect(is_cached).toBe(false);
    expect(batch_id).toMatch(/^batch_/);
    const batch = (await te.db.pool.query(`SELECT * FROM batches WHERE id = $1`, [batch_id])).rows[0];
    expect(batch).toMatchObject({ environment_id: te.env.id, run_count: 2 });
    expect(batch.sealed_at).not.toBeNull();
    const runs = await Promise.all(run_ids.map((id: string) => row(id)));
    expect(runs.map((r) => [r.task_identifier, r.batch_id, r.batch_index, r.trigger_function, r.status, r.payload])).toEqual([
      ["b1", batch_id, 0, "batchTrigger", "QUEUED", { i: 0 }],
      ["b2", batch_id, 1, "batchTrigger", "DELAYED", { i: 1 }],
    ]);
  });

  it("answers a batch idempotency key with its batch, and refuses a bad item naming it, creating nothing", async () => {
    const items = JSON.stringify([{ task: "bk", payload: 1 }]);
    const first = (await te.db.pool.query(`SELECT * FROM svc_batch_trigger($1, $2::jsonb, '{"idempotencyKey":"bk"}')`, [te.env.id, items])).rows[0];
    const again = (await te.db.pool.query(`SELECT * FROM svc_batch_trigger($1, $2::jsonb, '{"idempotencyKey":"bk"}')`, [te.env.id, items])).rows[0];
    expect(again).toEqual({ ...first, is_cached: true });
    const bad = JSON.stringify([{ task: "bad-batch", payload: 1 }, { task: "bad-batch", payload: 2, options: { ttl: "never" } }]);
    await expect(te.db.pool.query(`SELECT * FROM svc_batch_trigger($1, $2::jsonb)`, [te.env.id, bad])).rejects.toMatchObject({
      code: "22023", message: 'item 1 (task bad-batch): ttl: "never" is not a duration (e.g. "30s", "10m", "1h", "7d")',
    });
    await expect(te.db.pool.query(`SELECT * FROM svc_batch_trigger($1, '[]')`, [te.env.id])).rejects.toMatchObject({ code: "22023" });
    expect((await te.db.pool.query(`SELECT 1 FROM runs WHERE task_identifier = 'bad-batch'`)).rowCount).toBe(0);
  });
});
