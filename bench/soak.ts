import { task } from "../packages/runtime/src/sdk/index.ts";
import { postJson } from "./http-client.ts";
import { startOwnPostgres } from "./own-postgres.ts";
import { resumesOverHttp, suspendedRuns, waiter } from "./resume-latency.ts";
import { apiRunList, type RunListFilter } from "./run-list-client.ts";
import { benchDatabaseOn, benchStack, type BenchStack } from "./setup.ts";
import { fmt, now, percentiles } from "./stats.ts";
import { deadTuples } from "./table-bytes.ts";

const soakNoop = task({ id: "bench-soak-noop", run: async (payload: { n: number }) => ({ n: payload.n }) });

export interface SoakOptions {
  minutes: number;
  windowMinutes: number;
  triggersPerSecond: number;
  resumesPerSecond: number;
  listsPerSecond: number;
  /** false: the list lane leaves out its rare filter (status=WAITING, ~100 runs of the whole window). */
  rareFilter: boolean;
}

interface Window {
  triggers: number[];
  resumes: number[];
  lists: number[];
}

/** Calls `fn` `perSecond` times a second (on a fixed schedule, one call at a time) while `running()`. */
async function paced(perSecond: number, running: () => boolean, fn: () => Promise<void>) {
  const start = now();
  for (let k = 0; running(); k++) {
    const due = start + (k * 1000) / perSecond;
    const wait = due - now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (running()) await fn();
  }
}

/**
 * `BENCH=soak`: a steady mixed load for `minutes` on a Postgres of its own with autovacuum on:
 * HTTP triggers of a task that returns at once, runs waiting on tokens completed over HTTP (runs
 * suspended 100 at a time ahead of their completion), and run-list reads. Per window: the
 * latencies, and each changing table's dead tuples and size at the window's end.
 */
export async function soakScenario(o: SoakOptions): Promise<string[]> {
  const server = await startOwnPostgres("soak");
  const db = await benchDatabaseOn(server.url, "soak");
  const stack = await benchStack(db.url, { tasks: [waiter, soakNoop], api: true, concurrency: 100 });
  try {
    const windowMs = o.windowMinutes * 60_000;
    const windows: Window[] = [];
    const snapshots: Awaited<ReturnType<typeof deadTuples>>[] = [];
    const t0 = now();
    const end = t0 + o.minutes * 60_000;
    const running = () => now() < end;
    const last = Math.ceil(o.minutes / o.windowMinutes) - 1;
    // A request answered after the end counts in the last window.
    const current = () => (windows[Math.min(last, Math.floor((now() - t0) / windowMs))] ??= { triggers: [], resumes: [], lists: [] });
    const key = stack.project.environments.dev.secretKey;
    let n = 0;
    const triggers = paced(o.triggersPerSecond, running, async () => {
      const started = now();
      const res = await postJson(`${stack.apiUrl}/api/v1/tasks/bench-soak-noop/trigger`, JSON.stringify({ payload: { n: n++ } }), { authorization: `Bearer ${key}` });
      if (res.status !== 200) throw new Error(`trigger failed: ${res.status} ${res.text}`);
      current().triggers.push(now() - started);
    });
    const resumes = waits(stack, o.resumesPerSecond, running, (ms) => current().resumes.push(ms));
    const list = apiRunList(stack.apiUrl!, key);
    const filters: RunListFilter[] = [{}, { status: "COMPLETED" }, { task: "bench-wait" }, ...(o.rareFilter ? [{ status: "WAITING" as const }] : [])];
    let f = 0;
    const lists = o.listsPerSecond > 0
      ? paced(o.listsPerSecond, running, async () => {
          current().lists.push((await list.page(filters[f++ % filters.length]!)).clientMs);
        })
      : Promise.resolve();
    const sampling = (async () => {
      snapshots.push(await deadTuples(stack.pool));
      for (let w = 1; now() < end; w++) {
        const wait = t0 + w * windowMs - now();
        if (wait > 0) await new Promise((r) => setTimeout(r, Math.min(wait, end - now())));
        snapshots.push(await deadTuples(stack.pool));
      }
    })();
    await Promise.all([triggers, resumes, lists, sampling]);
    return report(o, windows, snapshots, server.settings);
  } finally {
    await stack.close();
    await db.close();
    await server.stop();
  }
}

/** The waits: runs suspended 100 at a time ahead, each completed over HTTP at `perSecond`. */
async function waits(stack: BenchStack, perSecond: number, running: () => boolean, record: (ms: number) => void) {
  const ready: string[] = await suspendedRuns(stack, 200);
  let filling: Promise<void> | null = null;
  await paced(perSecond, running, async () => {
    if (ready.length < 100 && !filling) filling = suspendedRuns(stack, 100).then((t) => void ready.push(...t)).finally(() => (filling = null));
    if (ready.length === 0) await filling;
    const { http } = await resumesOverHttp(stack, [ready.shift()!]);
    record(http[0]!);
  });
  await filling;
}

function report(o: SoakOptions, windows: Window[], snapshots: Awaited<ReturnType<typeof deadTuples>>[], settings: Record<string, string>): string[] {
  const p = (xs: number[]) => {
    const q = percentiles(xs);
    return `${fmt(q.p50)} / ${fmt(q.p99)}`;
  };
  const tables = ["public.runs", "public.run_attempts", "public.run_ledger", "public.waitpoints"];
  const at = (snap: Awaited<ReturnType<typeof deadTuples>>, table: string) => snap.find((t) => t.table === table);
  const cell = (snap: Awaited<ReturnType<typeof deadTuples>>) =>
    tables.map((t) => at(snap, t)).map((t) => (t ? `${t.dead.toLocaleString("en-US")} / ${t.live.toLocaleString("en-US")} (${(t.bytes / 1_048_576).toFixed(1)} MB, ${t.autovacuums} av)` : "—")).join(" | ");
  const settingText = Object.entries(settings).map(([k, v]) => `${k}=${v}`).join(", ");
  return [
    `## Soak: ${o.minutes} minutes of ${o.triggersPerSecond} triggers/s, ${o.resumesPerSecond} waits/s completed, ${o.listsPerSecond} run lists/s${o.listsPerSecond > 0 && !o.rareFilter ? " (without the rare filter status=WAITING)" : ""} (own Postgres: ${settingText})`,
    `Latencies per ${o.windowMinutes}-minute window, client round trip p50 / p99 in ms (resume: completion sent → the code after the wait)`,
    `| window | triggers | trigger | resume | list |`,
    `|---|---|---|---|---|`,
    ...windows.map((w, i) => `| ${i + 1} | ${w.triggers.length.toLocaleString("en-US")} | ${p(w.triggers)} | ${p(w.resumes)} | ${p(w.lists)} |`),
    "",
    `Dead / live tuples (size with indexes and TOAST, autovacuums so far) at each window's end`,
    `| at | runs | run_attempts | run_ledger | waitpoints |`,
    `|---|---|---|---|---|`,
    ...snapshots.map((s, i) => `| ${i === 0 ? "start" : `${i * o.windowMinutes} min`} | ${cell(s)} |`),
  ];
}
