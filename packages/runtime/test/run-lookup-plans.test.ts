// The worker's two statements per run, the claim and the ending, find their runs by primary key
// or tuple id in the plan a connection caches for them (and so do a limited queue's claim and its
// rate marking, which run on generic plans) (the generic plan, made once per
// connection and kept until the table is analyzed again), however few runs the table held when
// the plan was made. Before: the ending joined its JSON input (estimated at 100 rows) to `runs`
// by hashing the table whole, and the claim's UPDATE joined its two picked CTEs to `runs` the same
// way; on a server without autovacuum (or any table not yet analyzed) that plan, made when the
// database was new, read every run at every ending and every claim.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM_LIMITED_SQL, CLAIM_READY_SQL, FINISH_EXECUTIONS_SQL, FakeClock, RATE_MARK_DELAYED_SQL, triggerRun } from "@svc/runtime/engine";
import { connectTestEngine, createTestDatabase, type ConnectedEngine, type TestDatabase } from "@svc/runtime/testing";

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

function* nodes(n: PlanNode): Generator<PlanNode> {
  yield n;
  for (const c of n.Plans ?? []) yield* nodes(c);
}

const clock = new FakeClock(new Date("2026-11-30T10:00:00Z"));
let db: TestDatabase;
let te: ConnectedEngine;

/** How the generic plan of `sql` reads `runs`: one entry per scan node of the table. */
async function scansOfRuns(sql: string): Promise<string[]> {
  const client = await db.pool.connect();
  try {
    await client.query("SET plan_cache_mode = force_generic_plan");
    await client.query(`PREPARE under_test AS ${sql}`);
    const { rows: types } = await client.query<{ t: string[] }>("SELECT array_to_json(parameter_types::text[]) AS t FROM pg_prepared_statements WHERE name = 'under_test'");
    const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) EXECUTE under_test(${types[0]!.t.map((t) => `NULL::${t}`).join(", ")})`,
    );
    return [...nodes(rows[0]!["QUERY PLAN"][0].Plan)].filter((n) => n["Relation Name"] === "runs" && n["Node Type"] !== "ModifyTable").map((n) => `${n["Node Type"]}${n["Index Name"] ? ` ${n["Index Name"]}` : ""}`);
  } finally {
    await client.query("DEALLOCATE ALL");
    await client.query("RESET plan_cache_mode");
    client.release();
  }
}

/** The limited claim and the rate marking read `runs` through indexes and tuple ids only. */
async function expectNoSequentialScans(stage: string) {
  for (const [name, sql] of [["limited claim", CLAIM_LIMITED_SQL], ["rate marking", RATE_MARK_DELAYED_SQL]] as const) {
    const scans = await scansOfRuns(sql);
    expect(scans.length, `${name}, ${stage}`).toBeGreaterThan(0);
    expect(scans.filter((s) => s === "Seq Scan"), `${name}, ${stage}`).toEqual([]);
  }
}

/** Copies of run `id`, finished, as a deployment's history holds them. */
async function history(id: string, count: number) {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT quote_ident(column_name) AS name FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = 'runs' AND is_generated = 'NEVER' ORDER BY ordinal_position`,
  );
  const columns = rows.map((c) => c.name).join(", ");
  await db.pool.query(
    `INSERT INTO runs (${columns}) SELECT ${columns} FROM (
       SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || jsonb_build_object('id', r.id || '_' || g, 'status', 'COMPLETED', 'finished_at', r.created_at))).*
       FROM runs r, generate_series(1, $2::int) g WHERE r.id = $1) x`,
    [id, count],
  );
}

beforeAll(async () => {
  db = await createTestDatabase();
  te = await connectTestEngine({ url: db.url, pool: db.pool }, { clock });
});
afterAll(async () => {
  await te?.close();
  await db?.drop();
});

describe("the claim's and the ending's cached plans", () => {
  it("find runs by key in a database whose runs were never analyzed, and once a small history was", async () => {
    const { rows } = await db.pool.query<{ reltuples: number }>("SELECT reltuples FROM pg_class WHERE oid = 'runs'::regclass");
    // A fresh database: Postgres plans `runs` as 10 pages of rows (never analyzed).
    expect(rows[0]!.reltuples).toBeLessThan(0);
    expect(await scansOfRuns(FINISH_EXECUTIONS_SQL), "never analyzed").toEqual(["Index Scan runs_pkey"]);
    expect((await scansOfRuns(CLAIM_READY_SQL)).sort(), "never analyzed").toEqual(["Index Scan runs_queued", "Index Scan runs_resumable", "Tid Scan"]);
    await expectNoSequentialScans("never analyzed");

    // 3,000 finished runs, analyzed: a sequential scan costs less than 100 index probes, the
    // estimate of a JSON input's rows.
    const run = await triggerRun(te.engine, te.env, "plans", {});
    await history(run.id, 3_000);
    await db.pool.query("ANALYZE runs");
    expect(await scansOfRuns(FINISH_EXECUTIONS_SQL), "analyzed").toEqual(["Index Scan runs_pkey"]);
    expect((await scansOfRuns(CLAIM_READY_SQL)).sort(), "analyzed").toEqual(["Index Scan runs_queued", "Index Scan runs_resumable", "Tid Scan"]);
    await expectNoSequentialScans("analyzed");
  });
});
