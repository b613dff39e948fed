// The run list's lanes (list-statement.ts): a status filter reads one lane per final status and one
// for the live statuses, a task filter one lane per task, each in the index order of its own; the
// page is the newest of their union. Whatever the mix, pages walked forwards and backwards must be
// exactly the matching runs in (created_at, id) order — checked against the same filter in JS.
// Test runs and worker versions (migration 0033) are filters of the same kind: checked the same way,
// and so are bulk actions (bulk_action_runs, migration 0051: a lane per action, before any other).
// Statuses are matched as presented: a QUEUED run of a task its environment never registered
// (no worker_tasks row) is PENDING_VERSION, as Trigger.dev shows it (pending-version.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FakeClock,
  FINAL_STATUSES,
  getEnvironment,
  listRuns,
  MAX_RUN_LIST_LANES,
  RUN_STATUSES,
  triggerRun,
  type Environment,
  type RunListFilters,
  type RunStatus,
} from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";

const T0 = new Date("2031-06-01T00:00:00.000Z");
const clock = new FakeClock(T0);
const TASKS = ["alpha", "beta", "gamma"];
let te: TestEngine;
let envs: Environment[];
let all: {
  id: string; created_at: Date; environment_id: string; status: RunStatus; presented: RunStatus; task_identifier: string; queue_name: string; list_status: string; tags: string[];
  is_test: boolean; worker_version: string | null; bulk: string[];
}[];
/** Bulk actions and the runs each touched: A every third run of the first environment, B (overlapping A) every fourth, C three in five runs of the second. */
const BULK = { A: "bulk_lanesa", B: "bulk_lanesb", C: "bulk_lanesc" } as const;

beforeAll(async () => {
  te = await startTestEngine({ clock });
  envs = [te.env, (await getEnvironment(te.db.pool, te.project.environments.prod.id))!];
  // 78 runs: every status six times over two environments and three tasks, ties on created_at.
  for (let i = 0; i < RUN_STATUSES.length * 6; i++) {
    clock.set(new Date(T0.getTime() + Math.floor(i / 3) * 1000));
    // Some runs on a shared queue, some on another task's default queue, the rest on their own.
    const queue = i % 4 === 0 ? "shared" : i % 7 === 0 ? "task/beta" : undefined;
    // Tags: "odd" on every other run, "five" on every fifth (some runs have both), "rare" on two.
    const tags = [...(i % 2 === 1 ? ["odd"] : []), ...(i % 5 === 0 ? ["five"] : []), ...(i === 7 || i === 60 ? ["rare"] : [])];
    const run = await triggerRun(te.engine, envs[i % 2]!, TASKS[i % 3]!, {}, { tags, ...(queue ? { queue: { name: queue } } : {}) });
    // Test runs: a few; versions: "v1" on the first half, "v2" on the second, none on some.
    const version = i % 9 === 4 ? null : i < 39 ? "v1" : "v2";
    await te.db.pool.query(`UPDATE runs SET status = $2, is_test = $3, worker_version = $4 WHERE id = $1`, [run.id, RUN_STATUSES[(i * 5) % RUN_STATUSES.length], i % 6 === 1, version]);
  }
  // v1's claims ended at its last run (T0 + 12 s); v2 is still claiming; "absent" has no runs;
  // "legacy" is a version an older build ran (`infinity`: read as before, the whole window).
  for (const env of envs) {
    await te.db.pool.query(`INSERT INTO worker_versions (environment_id, version, seen_until) VALUES ($1, 'v1', $2), ($1, 'v2', $3), ($1, 'absent', $2), ($1, 'legacy', 'infinity')`,
      [env.id, new Date(T0.getTime() + 12_000), new Date(T0.getTime() + 3_600_000)]);
  }
  await te.db.pool.query(`UPDATE runs SET worker_version = 'legacy' WHERE id IN (SELECT id FROM runs WHERE worker_version IS NULL ORDER BY created_at LIMIT 3)`);
  // Registered tasks: alpha and beta in the first environment, gamma in the second; the rest never.
  const registered = [[envs[0]!.id, "alpha"], [envs[0]!.id, "beta"], [envs[1]!.id, "gamma"]];
  for (const [env, task] of registered) {
    await te.db.pool.query(`INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version) VALUES ($1, $2, 'task/' || $2, 'v1')`, [env, task]);
  }
  const isRegistered = (env: string, task: string) => registered.some(([e, t]) => e === env && t === task);
  const rows = (await te.db.pool.query(`SELECT id, created_at, environment_id, status, task_identifier, queue_name, list_status, tags, is_test, worker_version FROM runs ORDER BY created_at DESC, id DESC`)).rows;
  const touched: [string, string, Date, string][] = [];
  const seen = new Map<string, number>();
  const bulkOf = (r: { id: string; created_at: Date; environment_id: string }): string[] => {
    // The run's place among its environment's runs (newest first).
    const i = seen.get(r.environment_id) ?? 0;
    seen.set(r.environment_id, i + 1);
    const own = r.environment_id === envs[0]!.id
      ? [...(i % 3 === 0 ? [BULK.A] : []), ...(i % 4 === 0 ? [BULK.B] : [])]
      : i % 5 < 3 ? [BULK.C] : [];
    for (const action of own) touched.push([r.environment_id, action, r.created_at, r.id]);
    return own;
  };
  all = rows.map((r) => ({ ...r, bulk: bulkOf(r), presented: r.status === "QUEUED" && !isRegistered(r.environment_id, r.task_identifier) ? "PENDING_VERSION" : r.status }));
  for (const [action, env] of [[BULK.A, envs[0]!.id], [BULK.B, envs[0]!.id], [BULK.C, envs[1]!.id]] as const) {
    await te.db.pool.query(`INSERT INTO bulk_actions (id, environment_id, action, status, run_ids, total, created_at, updated_at) VALUES ($1, $2, 'CANCEL', 'COMPLETED', '{}', 0, $3, $3)`, [action, env, T0]);
  }
  for (const [env, action, at, run] of touched) {
    await te.db.pool.query(`INSERT INTO bulk_action_runs (environment_id, bulk_action_id, created_at, run_id) VALUES ($1, $2, $3, $4)`, [env, action, at, run]);
  }
});
afterAll(async () => te?.close());

const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

async function walk(environmentIds: string[], filters: RunListFilters, size: number) {
  const forwards: string[] = [];
  let after: { created_at: Date; id: string } | undefined;
  for (let page; (page = await listRuns(te.engine.db, environmentIds, filters, {
    keyset: after ? { sql: "(created_at, id) < ($1, $2)", values: [after.created_at, after.id] } : null,
    direction: "desc",
    limit: size,
  })).length > 0; ) {
    forwards.push(...ids(page));
    after = page[page.length - 1];
  }
  const backwards: string[] = [];
  let before = { created_at: new Date(0), id: "" };
  for (let page; (page = await listRuns(te.engine.db, environmentIds, filters, {
    keyset: { sql: "(created_at, id) > ($1, $2)", values: [before.created_at, before.id] },
    direction: "asc",
    limit: size,
  })).length > 0; ) {
    backwards.unshift(...ids(page).reverse());
    before = page[page.length - 1]!;
  }
  return { forwards, backwards };
}

function expected(environmentIds: string[], filters: RunListFilters) {
  return ids(all.filter((r) =>
    environmentIds.includes(r.environment_id) &&
    (!filters.statuses || filters.statuses.includes(r.presented)) &&
    (!filters.taskIdentifiers || filters.taskIdentifiers.includes(r.task_identifier)) &&
    (!filters.queues || filters.queues.includes(r.queue_name)) &&
    (!filters.tags || filters.tags.some((t) => r.tags.includes(t))) &&
    (filters.isTest === undefined || r.is_test === filters.isTest) &&
    (!filters.versions || (r.worker_version !== null && filters.versions.includes(r.worker_version))) &&
    (!filters.bulkActionIds || filters.bulkActionIds.some((b) => r.bulk.includes(b))) &&
    (!filters.createdFrom || r.created_at >= filters.createdFrom) &&
    (!filters.createdTo || r.created_at <= filters.createdTo)));
}

describe("run list lanes", () => {
  it("list_status is the status once it is final, and LIVE while the run is live", () => {
    for (const run of all) expect(run.list_status).toBe(FINAL_STATUSES.includes(run.status) ? run.status : "LIVE");
    expect(new Set(all.map((r) => r.status))).toEqual(new Set(RUN_STATUSES));
  });

  const cases: [string, RunListFilters][] = [
    ["one final status", { statuses: ["FAILED"] }],
    ["several final statuses", { statuses: ["COMPLETED", "CANCELED", "EXPIRED"] }],
    ["one live status", { statuses: ["WAITING"] }],
    ["final and live statuses", { statuses: ["QUEUED", "COMPLETED", "EXECUTING", "TIMED_OUT"] }],
    ["every status", { statuses: [...RUN_STATUSES] }],
    ["PENDING_VERSION (queued runs of never-registered tasks)", { statuses: ["PENDING_VERSION"] }],
    ["QUEUED (queued runs of registered tasks)", { statuses: ["QUEUED", "FAILED"] }],
    ["PENDING_VERSION and QUEUED", { statuses: ["PENDING_VERSION", "QUEUED"] }],
    ["PENDING_VERSION and a tag", { statuses: ["PENDING_VERSION", "COMPLETED"], tags: ["odd", "five"] }],
    ["QUEUED, a tag and a task", { statuses: ["QUEUED"], tags: ["odd"], taskIdentifiers: ["alpha", "gamma"] }],
    ["a status nothing has", { statuses: ["SYSTEM_FAILURE", "DEQUEUED"], taskIdentifiers: ["nobody"] }],
    ["one task", { taskIdentifiers: ["beta"] }],
    ["two tasks", { taskIdentifiers: ["alpha", "gamma"] }],
    ["tasks and statuses", { taskIdentifiers: ["alpha", "beta"], statuses: ["WAITING", "FAILED", "COMPLETED", "QUEUED"] }],
    ["a shared queue", { queues: ["shared"] }],
    ["a task's default queue, which other tasks' runs were put on too", { queues: ["task/beta"] }],
    ["default and shared queues", { queues: ["task/alpha", "shared", "task/nobody"] }],
    ["queues and statuses", { queues: ["task/beta", "shared"], statuses: ["FAILED", "WAITING", "COMPLETED"] }],
    ["queues and tasks", { queues: ["task/beta", "shared"], taskIdentifiers: ["alpha", "beta"] }],
    ["one tag", { tags: ["five"] }],
    ["two tags that some runs both have", { tags: ["five", "odd"] }],
    ["a rare tag and one nobody has", { tags: ["rare", "none"] }],
    ["tags and statuses", { tags: ["five", "odd"], statuses: ["FAILED", "WAITING", "COMPLETED", "QUEUED"] }],
    ["tags in a window", { tags: ["five", "odd"], createdFrom: new Date(T0.getTime() + 10_000) }],
    ["tags and a task (the task chooses the lanes)", { tags: ["odd"], taskIdentifiers: ["alpha", "gamma"] }],
    ["test runs", { isTest: true }],
    ["runs that are not tests", { isTest: false }],
    ["test runs with statuses and a tag", { isTest: true, statuses: ["FAILED", "WAITING", "COMPLETED", "QUEUED", "CANCELED"], tags: ["odd", "five"] }],
    ["a version whose claims have ended", { versions: ["v1"] }],
    ["a version still claiming, and one without runs", { versions: ["v2", "absent"] }],
    ["a version an older build ran (read as before), and another", { versions: ["legacy", "v1"] }],
    ["a version that nothing has, and one no worker ever had", { versions: ["absent", "no-such-version"] }],
    ["a version with a status, and with a tag", { versions: ["v1"], statuses: ["FAILED", "COMPLETED", "WAITING"], tags: ["five", "odd"] }],
    ["a version with a task", { versions: ["v1", "v2"], taskIdentifiers: ["beta"] }],
    ["one bulk action", { bulkActionIds: [BULK.A] }],
    ["two bulk actions that touched some runs both", { bulkActionIds: [BULK.A, BULK.B] }],
    ["bulk actions of both environments, and one of none", { bulkActionIds: [BULK.B, BULK.C, "bulk_nosuchaction"] }],
    ["a bulk action and statuses", { bulkActionIds: [BULK.A, BULK.C], statuses: ["FAILED", "WAITING", "COMPLETED", "QUEUED", "PENDING_VERSION"] }],
    ["a bulk action, a task and a queue", { bulkActionIds: [BULK.A, BULK.B, BULK.C], taskIdentifiers: ["alpha", "beta"], queues: ["shared", "task/beta", "task/alpha"] }],
    ["a bulk action, tags, a window and a version", { bulkActionIds: [BULK.B, BULK.C], tags: ["odd", "five"], createdFrom: new Date(T0.getTime() + 5_000), versions: ["v1", "v2"] }],
    ["a bulk action and test runs", { bulkActionIds: [BULK.A, BULK.C], isTest: false }],
  ];
  for (const [name, filters] of cases) {
    it(`pages through ${name} over two environments, forwards and backwards`, async () => {
      const both = envs.map((e) => e.id);
      const want = expected(both, filters);
      for (const size of [1, 3, 100]) {
        const { forwards, backwards } = await walk(both, filters, size);
        expect(forwards).toEqual(want);
        expect(backwards).toEqual(want);
      }
      expect(await walk([envs[1]!.id], filters, 2)).toEqual({ forwards: expected([envs[1]!.id], filters), backwards: expected([envs[1]!.id], filters) });
    });
  }

  it("returns each run with its presented status, and the fixtures have queued runs of both kinds in both environments", async () => {
    const both = envs.map((e) => e.id);
    const page = await listRuns(te.engine.db, both, {}, { keyset: null, direction: "desc", limit: 500 });
    expect(new Map(page.map((r) => [r.id, r.status]))).toEqual(new Map(all.map((r) => [r.id, r.presented])));
    for (const env of both) {
      for (const status of ["QUEUED", "PENDING_VERSION"]) expect(all.some((r) => r.environment_id === env && r.presented === status)).toBe(true);
    }
  });

  it("refuses a status that is not one, before anything reaches SQL (statuses are written into the statement)", async () => {
    const hostile = ["FAILED' OR '1'='1" as RunStatus];
    await expect(listRuns(te.engine.db, [envs[0]!.id], { statuses: hostile }, { keyset: null, direction: "desc", limit: 5 })).rejects.toThrow(/is not a run status/);
  });

  it("the test and version fixtures hold what the cases need", () => {
    expect(all.filter((r) => r.is_test).length).toBeGreaterThan(5);
    for (const version of ["v1", "v2", "legacy"]) expect(all.filter((r) => r.worker_version === version).length).toBeGreaterThan(2);
  });

  it("a version's walk starts at its seen_until (plus the clocks' margin): runs created after it are not read", async () => {
    const late = all.find((r) => r.worker_version === "v2" && r.environment_id === envs[0]!.id)!;
    const bound = new Date(late.created_at.getTime() - 1);
    try {
      // Pretend v2's claims ended before `late` was created, margin included.
      await te.db.pool.query(`UPDATE worker_versions SET seen_until = $2::timestamptz - interval '5 minutes' WHERE environment_id = $1 AND version = 'v2'`, [envs[0]!.id, bound]);
      const page = await listRuns(te.engine.db, [envs[0]!.id], { versions: ["v2"] }, { keyset: null, direction: "desc", limit: 100 });
      expect(page.map((r) => r.id)).toEqual(expected([envs[0]!.id], { versions: ["v2"], createdTo: bound }));
      expect(page.length).toBeGreaterThan(0);
    } finally {
      await te.db.pool.query(`UPDATE worker_versions SET seen_until = $2 WHERE environment_id = $1 AND version = 'v2'`, [envs[0]!.id, new Date(T0.getTime() + 3_600_000)]);
    }
  });

  it("run_tags holds one row per tag of each run, at the run's created_at", async () => {
    const { rows } = await te.db.pool.query(`SELECT run_id, tag, created_at, environment_id FROM run_tags ORDER BY run_id, tag`);
    const want = all.flatMap((r) => [...r.tags].sort().map((tag) => ({ run_id: r.id, tag, created_at: r.created_at, environment_id: r.environment_id })));
    expect(rows).toEqual(want.sort((a, b) => (a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0)));
    expect(all.some((r) => r.tags.includes("five") && r.tags.includes("odd"))).toBe(true);
  });

  it("the queue fixtures hold what the cases need", () => {
    const onBeta = all.filter((r) => r.queue_name === "task/beta");
    expect(onBeta.some((r) => r.task_identifier === "beta")).toBe(true);
    expect(onBeta.some((r) => r.task_identifier !== "beta")).toBe(true);
    expect(all.filter((r) => r.queue_name === "shared").length).toBeGreaterThan(10);
  });

  it("past the lane limit, queues become one condition per lane and the list is still exact", async () => {
    const many = [...Array.from({ length: MAX_RUN_LIST_LANES }, (_, i) => `task/absent-${i}`), "shared", "task/beta"];
    const filters: RunListFilters = { queues: many, statuses: ["FAILED", "WAITING"] };
    const both = envs.map((e) => e.id);
    const { forwards, backwards } = await walk(both, filters, 2);
    expect(forwards).toEqual(expected(both, filters));
    expect(backwards).toEqual(forwards);
    expect(forwards.length).toBeGreaterThan(2);
  });

  it("the bulk action fixtures hold what the cases need", () => {
    for (const action of Object.values(BULK)) expect(all.filter((r) => r.bulk.includes(action)).length).toBeGreaterThan(5);
    expect(all.some((r) => r.bulk.includes(BULK.A) && r.bulk.includes(BULK.B))).toBe(true);
  });

  it("past the lane limit, bulk actions become one condition per lane and the list is still exact", async () => {
    const many = [...Array.from({ length: MAX_RUN_LIST_LANES }, (_, i) => `bulk_absent${i}`), BULK.B, BULK.C];
    const filters: RunListFilters = { bulkActionIds: many, statuses: ["FAILED", "WAITING", "COMPLETED"] };
    const both = envs.map((e) => e.id);
    const { forwards, backwards } = await walk(both, filters, 2);
    expect(forwards).toEqual(expected(both, filters));
    expect(backwards).toEqual(forwards);
    expect(forwards.length).toBeGreaterThan(2);
  });

  it("a bulk action's lane walks bulk_action_runs' primary key in page order and stops after a page", async () => {
    const plan: string[] = [];
    const explaining = {
      query: async (text: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
        const [sql, params] = typeof text === "string" ? [text, values] : [text.text, text.values];
        if (!/^\s*(SELECT|WITH)/i.test(sql)) return te.db.pool.query(sql, params);
        plan.push(...(await te.db.pool.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, FORMAT TEXT) ${sql}`, params)).rows.map((r) => r["QUERY PLAN"]));
        return { rows: [], rowCount: 0 };
      },
    } as unknown as Parameters<typeof listRuns>[0];
    await listRuns(explaining, [envs[0]!.id], { bulkActionIds: [BULK.A] }, { keyset: null, direction: "desc", limit: 2 });
    const scan = plan.find((line) => /bulk_action_runs_pkey/.test(line));
    expect(scan, plan.join("\n")).toMatch(/Index (Only )?Scan Backward using bulk_action_runs_pkey/);
    // A page of 2 reads 2 of the action's runs, not all of them (more than 5, above).
    expect(plan.join("\n")).toMatch(/bulk_action_runs_pkey[^\n]*\n?[^\n]*actual time=[0-9.]+\.\.[0-9.]+ rows=2 /);
  });

  it("past the lane limit, tasks become one condition per lane and the list is still exact", async () => {
    const many = [...Array.from({ length: MAX_RUN_LIST_LANES }, (_, i) => `absent-${i}`), "gamma", "alpha"];
    const filters: RunListFilters = { taskIdentifiers: many, statuses: ["FAILED", "WAITING", "CRASHED"] };
    const both = envs.map((e) => e.id);
    const { forwards, backwards } = await walk(both, filters, 2);
    expect(forwards).toEqual(expected(both, filters));
    expect(backwards).toEqual(forwards);
    expect(forwards.length).toBeGreaterThan(2);
  });
});
