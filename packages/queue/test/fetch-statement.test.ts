// pg-boss's fetch with its UPDATE reaching the fetched rows by tuple id (fetch-statement.ts). The job table of a
// queue is analyzed while empty, then a backlog arrives: pg-boss's own statement then reads every
// row of the queue for each fetch; the rewritten one reads the fetched rows alone.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { JobConsumer, startQueueName, type ConsumedJob } from "../src/index.ts";
import { fetchByTupleIds, fetchDeleting, fetchWithBatchSizeParameter, fetchWithTail } from "../src/fetch-statement.ts";
import { preparedText } from "@svc/runtime/db";
import { pgBossDispatcher, type PgBossTestDispatcher } from "../src/testing.ts";

let te: TestEngine<PgBossTestDispatcher>;
let queue: string;
/** pg-boss's fetch statement for `queue`, as its fetch() sends it (the db option sees it). */
let pgBossText: string;

beforeAll(async () => {
  te = await startTestEngine({ dispatcher: pgBossDispatcher({ max: 4 }) });
  queue = startQueueName(te.env.id, "task/backlog");
  await te.queue.dispatcher.ensureQueue(queue);
  await te.queue.boss.fetch(queue, { batchSize: 200, db: { executeSql: async (text: string) => ((pgBossText = text), { rows: [] }) } });
});
afterAll(async () => te?.close());

const insertJobs = (n: number) =>
  te.db.pool.query(`INSERT INTO pgboss.job_common (id, name, data) SELECT gen_random_uuid(), $1, '{}' FROM generate_series(1, $2::int)`, [queue, n]);

async function backlog(jobs: number) {
  // Jobs handled and deleted (their dead rows stay until a vacuum), the table analyzed while it
  // holds no live row (as autovacuum does between bursts), then a backlog.
  await te.db.pool.query(`DELETE FROM pgboss.job_common WHERE name = $1`, [queue]);
  await insertJobs(jobs);
  await te.db.pool.query(`DELETE FROM pgboss.job_common WHERE name = $1`, [queue]);
  await te.db.pool.query(`ANALYZE pgboss.job_common`);
  await insertJobs(jobs);
}

async function plan(text: string): Promise<string> {
  const client = await te.db.pool.connect();
  try {
    await client.query("BEGIN");
    const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF) ${text}`);
    return rows.map((r) => r["QUERY PLAN"]).join("\n");
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
}

describe("pg-boss's fetch, rewritten to reach the fetched rows by tuple id", () => {
  it("recognises the statement of the pinned pg-boss (a version that changes it fails here, not silently)", () => {
    const rewritten = fetchByTupleIds(pgBossText);
    expect(rewritten).not.toBeNull();
    expect(rewritten).toContain("j.ctid = ANY (ARRAY(SELECT ctid FROM next))");
    expect(rewritten).toMatch(/SELECT j\.id, j\.ctid\s+FROM/);
    expect(rewritten).not.toMatch(/FROM next\s+WHERE/);
    expect(fetchByTupleIds("SELECT 1")).toBeNull();
  });

  it("makes the batch size a parameter of the pinned pg-boss's statement, rewritten or not: one text for every batch size", async () => {
    await te.db.pool.query(`DELETE FROM pgboss.job_common WHERE name = $1`, [queue]);
    await insertJobs(3);
    for (const text of [pgBossText, fetchByTupleIds(pgBossText)!]) {
      const constant = fetchWithBatchSizeParameter(text, []);
      expect(constant).not.toBeNull();
      expect(constant!.text).toMatch(/\bLIMIT \$1::int\s+FOR UPDATE OF j SKIP LOCKED/);
      expect(constant!.text).not.toMatch(/\bLIMIT \d/);
      expect(constant!.values).toEqual([200]);
      // Its value is the batch size: two of the three queued jobs.
      const { rows } = await te.db.pool.query(constant!.text, [2]);
      expect(rows).toHaveLength(2);
      await te.db.pool.query(`UPDATE pgboss.job_common SET state = 'created', started_on = NULL WHERE name = $1`, [queue]);
    }
    expect(fetchWithBatchSizeParameter("SELECT 1 LIMIT 5", [])).toBeNull();
  });

  it("carries the deletion of handled jobs in the pinned pg-boss's statement, rewritten or not", () => {
    for (const text of [pgBossText, fetchByTupleIds(pgBossText)!]) {
      const carried = fetchDeleting(text, [], [{ id: "00000000-0000-4000-8000-000000000001", retryCount: 2 }]);
      expect(carried).not.toBeNull();
      expect(carried!.text).toMatch(/^\s*WITH\s*handled AS \(\s*DELETE FROM pgboss\.job_common WHERE name = '[^']+' AND id = ANY \(\$1::uuid\[\]\)/);
      expect(carried!.values).toEqual([["00000000-0000-4000-8000-000000000001"], ["00000000-0000-4000-8000-000000000001:2"]]);
    }
    expect(fetchDeleting("SELECT 1", [], [])).toBeNull();
  });

  it("runs a tail over the fetched jobs in the same statement, and returns its column with each job", async () => {
    await te.db.pool.query(`DELETE FROM pgboss.job_common WHERE name = $1`, [queue]);
    await insertJobs(3);
    const tail = { ctes: (first: number) => `counted AS (SELECT count(*)::int + $${first}::int AS n FROM fetched)`, column: `(SELECT n FROM counted) + 0 * length(f.id::text)`, values: [100] };
    for (const text of [pgBossText, fetchByTupleIds(pgBossText)!]) {
      const statement = fetchWithTail(text, [], tail)!;
      expect(statement).not.toBeNull();
      const { rows } = await te.db.pool.query(statement.text, statement.values);
      // pg-boss's columns, and the tail's.
      expect(rows).toHaveLength(3);
      for (const row of rows) expect(row).toMatchObject({ id: expect.any(String), name: queue, retryCount: 0, svc_with: 103 });
      await te.db.pool.query(`UPDATE pgboss.job_common SET state = 'created', started_on = NULL WHERE name = $1`, [queue]);
    }
    expect(fetchWithTail("SELECT 1", [], tail)).toBeNull();
  });

  it("after an ANALYZE of the empty table, reads the fetched rows alone instead of the whole queue", async () => {
    await backlog(3_000);
    const original = await plan(pgBossText);
    const rewritten = await plan(fetchByTupleIds(pgBossText)!);
    // pg-boss's text, on these statistics: the UPDATE reads every row of the queue (in whichever
    // join the planner picks) to find the 200 it fetched.
    expect(original).toMatch(/Rows Removed by (Join )?Filter: \d{4,}/);
    expect(rewritten).not.toMatch(/Rows Removed by (Join )?Filter/);
    expect(rewritten).toMatch(/Tid Scan on job_common j/);
  });

  it("fetches through the prepared connection with one text per queue, whatever the free slots", async () => {
    await backlog(60);
    const sent: { text: string; values: unknown[] }[] = [];
    const seen = new Set<string>();
    const consumers = [3, 7].map(
      (concurrency) =>
        new JobConsumer(te.queue.boss, {
          concurrency,
          pollIntervalMs: 50,
          heartbeatIntervalMs: 4000,
          preparedFetchDb: {
            executeSql: (text, values) => {
              sent.push({ text, values: values ?? [] });
              return te.db.pool.query(preparedText(text, values ?? []));
            },
          },
          handle: async (job: ConsumedJob, release) => {
            seen.add(job.id);
            release();
          },
          onError: (error) => {
            throw error;
          },
        }),
    );
    for (const consumer of consumers) {
      consumer.subscribe({ name: queue });
      consumer.start();
    }
    try {
      await expect.poll(() => seen.size, { timeout: 20_000 }).toBe(60);
    } finally {
      for (const consumer of consumers) await consumer.drain();
    }
    // Fetches with and without handled jobs to delete: a text each, the batch size a value.
    const texts = new Set(sent.map((s) => s.text));
    expect(texts.size).toBeLessThanOrEqual(2);
    for (const text of texts) expect(text).toMatch(/\bLIMIT \$1::int\b/);
    const sizes = new Set(sent.map((s) => s.values[0]));
    expect(sizes.has(3) && sizes.has(7)).toBe(true);
  });

  it("fetches the same jobs: the consumer takes a backlog whole, each job once", async () => {
    await backlog(500);
    const seen: string[] = [];
    const consumer = new JobConsumer(te.queue.boss, {
      concurrency: 100,
      pollIntervalMs: 50,
      heartbeatIntervalMs: 4000,
      handle: async (job: ConsumedJob, release) => {
        seen.push(job.id);
        release();
      },
      onError: (error) => {
        throw error;
      },
    });
    consumer.subscribe({ name: queue });
    consumer.start();
    try {
      await expect.poll(() => seen.length, { timeout: 20_000 }).toBe(500);
    } finally {
      await consumer.drain();
    }
    expect(new Set(seen).size).toBe(500);
    const { rows } = await te.db.pool.query(`SELECT count(*)::int AS n FROM pgboss.job_common WHERE name = $1 AND state = 'created'`, [queue]);
    expect(rows[0].n).toBe(0);
  });
});
