// The plain claim over a backlog of a task the worker does not serve (migration 0056): the claim's
// indexes carry the task, so it checks other tasks' ready runs in the index entry and fetches only
// its own from the heap. Before, every claim fetched that whole backlog, run row by run row.
// Postgres 17 and later use a `= ANY (…)` condition on an index's later column in a scan that
// keeps the index's order (the claim's oldest-first); 15 and 16 filter the rows instead, as before
// the migration. So this file runs on a Postgres 18 of its own, whatever DATABASE_URL runs.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM_READY_SQL, FakeClock, triggerRun } from "@svc/runtime/engine";
import { connectTestEngine, type ConnectedEngine } from "@svc/runtime/testing";
import { createPool, migrate, type Pool } from "@svc/runtime/db";
import { startEmbeddedPostgres } from "../../../scripts/embedded-postgres.ts";
import { CLAIM_CONNECTION_SETTINGS, claimReady } from "../src/execution/claim.ts";

const clock = new FakeClock(new Date("2026-11-29T10:00:00Z"));
let server: Awaited<ReturnType<typeof startEmbeddedPostgres>>;
let pool: Pool;
let te: ConnectedEngine & { db: { pool: Pool } };
const BACKLOG = 1_000;

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Index Cond"?: string;
  "Shared Hit Blocks": number;
  "Shared Read Blocks": number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

function* nodes(n: PlanNode): Generator<PlanNode> {
  yield n;
  for (const c of n.Plans ?? []) yield* nodes(c);
}

/** Copies run `id` `count` times, each a millisecond older than the one before, with `set` over its columns. */
async function copies(id: string, count: number, set: Record<string, unknown> = {}) {
  const { rows } = await te.db.pool.query<{ name: string }>(
    `SELECT quote_ident(column_name) AS name FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = 'runs' AND is_generated = 'NEVER' ORDER BY ordinal_position`,
  );
  const columns = rows.map((c) => c.name).join(", ");
  await te.db.pool.query(
    `INSERT INTO runs (${columns}) SELECT ${columns} FROM (
       SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || $3::jsonb || jsonb_build_object('id', r.id || '_' || g, 'created_at', r.created_at - g * interval '1 millisecond'))).*
       FROM runs r, generate_series(1, $2::int) g WHERE r.id = $1) x`,
    [id, count, JSON.stringify(set)],
  );
}

/** The scan that finds the claim's starts, as EXPLAIN ANALYZE shows it, on a connection with `settings` (rolled back). */
async function startsScan(db: Pool, tasks: string[], settings: Record<string, string>): Promise<{ index: string; indexCond: string; buffers: number; filtered: number }> {
  const client = await db.connect();
  try {
    await client.query("BEGIN");
    for (const [k, v] of Object.entries(settings)) await client.query(`SELECT set_config($1, $2, true)`, [k, v]);
    await client.query(`PREPARE claim_plan(text, text[], int, text, text, timestamptz, int) AS ${CLAIM_READY_SQL}`);
    const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim_plan(${client.escapeLiteral(te.env.id)}, ${client.escapeLiteral(`{${tasks.join(",")}}`)}, 10, 'w', 'v1', ${client.escapeLiteral(clock.now().toISOString())}, 60000)`,
    );
    const all = [...nodes(rows[0]!["QUERY PLAN"][0].Plan)];
    // The starts CTE: the scan of `runs` under the second LockRows (the first is the resumes').
    const scans = all.filter((n) => n["Node Type"] === "LockRows").map((n) => n.Plans![0]!);
    const scan = scans[1]!;
    const leaf = [...nodes(scan)].find((n) => n["Node Type"].endsWith("Scan"))!;
    // A node's buffers include its children's.
    return { index: leaf["Index Name"] ?? leaf["Node Type"], indexCond: leaf["Index Cond"] ?? "", buffers: scan["Shared Hit Blocks"] + scan["Shared Read Blocks"], filtered: leaf["Rows Removed by Filter"] ?? 0 };
  } finally {
    await client.query("ROLLBACK");
    await client.query("DEALLOCATE claim_plan");
    client.release();
  }
}

beforeAll(async () => {
  server = await startEmbeddedPostgres(join(mkdtempSync(join(tmpdir(), "svc-claim-pg-")), "data"), { persistent: false });
  pool = createPool(server.url, { max: 4, onError: () => {} });
  await migrate(pool);
  te = { ...(await connectTestEngine({ url: server.url, pool }, { clock })), db: { pool } };
  const backlog = await triggerRun(te.engine, te.env, "nobody-serves-this", { n: 0 });
  await copies(backlog.id, BACKLOG);
  clock.advance(1);
  const mine = await triggerRun(te.engine, te.env, "mine", { n: 1 });
  // A history of finished runs, as a deployment has: the claim's indexes hold none of them.
  await copies(mine.id, 1_000, { status: "COMPLETED", finished_at: clock.now(), attempt_number: 1 });
  await te.db.pool.query("ANALYZE runs");
});
afterAll(async () => {
  await te?.close();
  await pool?.end();
  await server?.stop();
});

describe("the plain claim beside another task's backlog", () => {
  it("reads that backlog in its index, not run by run from the table, with the generic plan and the custom one", async () => {
    const { rows: ready } = await te.db.pool.query<{ n: number; pages: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT (ctid::text::point)[0])::int AS pages FROM runs WHERE task_identifier = 'nobody-serves-this' AND status = 'QUEUED' AND claim_from_runs`,
    );
    expect(ready[0]!.n).toBe(BACKLOG + 1);
    for (const mode of ["force_generic_plan", "force_custom_plan"]) {
      const starts = await startsScan(te.db.pool, ["mine"], { plan_cache_mode: mode });
      expect(starts.indexCond, mode).toContain("task_identifier");
      // The backlog's index entries fill a few pages; its rows, one fetch each, would be BACKLOG.
      expect(starts.buffers, mode).toBeLessThan(ready[0]!.pages);
    }
    const claimed = await claimReady(te.engine.db, { id: "w", version: "v1", environmentId: te.env.id, tasks: ["mine"] }, 10, clock.now(), 60_000);
    expect(claimed.map((c) => c.run.task_identifier)).toEqual(["mine"]);
  });
});

describe("the plain claim of a task the statistics have not seen", () => {
  it("reads its partial index on the worker's claim connections, where a custom plan would read every run the task had", async () => {
    // Runs of a task made after the last ANALYZE (a new task, or one that grew since): the
    // statistics say it has none. One is QUEUED, the rest finished.
    clock.advance(1);
    const fresh = await triggerRun(te.engine, te.env, "fresh", { n: 2 });
    await copies(fresh.id, 3_000, { status: "COMPLETED", finished_at: clock.now(), attempt_number: 1 });
    const onClaimConnections = await startsScan(te.db.pool, ["fresh"], { ...CLAIM_CONNECTION_SETTINGS });
    expect(onClaimConnections.index).toBe("runs_queued");
    expect(onClaimConnections.filtered).toBe(0);
    // What Postgres would do by itself for a prepared statement's first calls: the task's whole history.
    const custom = await startsScan(te.db.pool, ["fresh"], { plan_cache_mode: "force_custom_plan" });
    expect(custom.index).toBe("runs_task_list");
    expect(custom.filtered).toBeGreaterThanOrEqual(3_000);
  });
});
