import { withTransaction, type Pool, type Queryable } from "../packages/runtime/src/db/index.ts";
import { listRuns, listTokenRows, type RunListFilters } from "../packages/runtime/src/engine/index.ts";

const DAY = 86_400_000;

/**
 * EXPLAIN (ANALYZE, BUFFERS) of the reads that are slowest over a long history, on the very
 * statements the API runs (listRuns and listTokenRows are handed a Queryable that prefixes
 * EXPLAIN), with the list's planner settings. Per case: the plan's top nodes, buffers and time.
 */
export async function explainSlowReads(pool: Pool, envId: string, loadedAt: Date): Promise<string[]> {
  const window = { createdFrom: new Date(loadedAt.getTime() - 7 * DAY) };
  const runCases: [string, RunListFilters][] = [
    ["runs: nothing: status=EXPIRED", { ...window, statuses: ["EXPIRED"] }],
    ["runs: status=CANCELED", { ...window, statuses: ["CANCELED"] }],
    ["runs: nothing: task not run in 7 days", { ...window, taskIdentifiers: ["legacy-import"] }],
    ["runs: tag (tag-25)", { ...window, tags: ["tag-25"] }],
  ];
  const out: string[] = [];
  const page = { keyset: null, direction: "desc" as const, limit: 26 };
  for (const [label, filters] of runCases) {
    out.push(...(await explained(pool, label, (q) => listRuns(q, [envId], filters, page))));
  }
  out.push(...(await explained(pool, "tokens: nothing: status=TIMED_OUT", (q) => listTokenRows(q, envId, { statuses: ["TIMED_OUT"] }, null, "desc", 26))));
  return out;
}

async function explained(pool: Pool, label: string, statement: (q: Queryable) => Promise<unknown>): Promise<string[]> {
  const plan: string[] = [];
  await withTransaction(pool, async (tx) => {
    await tx.query("SET LOCAL enable_seqscan = off; SET LOCAL jit = off");
    const explaining: Queryable = {
      query: (async (statement: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
        const [text, params] = typeof statement === "string" ? [statement, values] : [statement.text, statement.values];
        const result = await tx.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
        plan.push(...result.rows.map((r) => r["QUERY PLAN"]));
        return { ...result, rows: [] };
      }) as unknown as Queryable["query"],
    };
    await statement(explaining);
  });
  const keep = plan.filter((l) => /Scan|Limit|Sort|Filter|Rows Removed|Buffers|Execution Time|Nested Loop|Bitmap/.test(l)).slice(0, 14);
  return [`${label}:`, ...keep.map((l) => `    ${l}`)];
}
