import { readFileSync } from "node:fs";
import pg from "pg";
import { CHANNELS } from "../packages/runtime/src/engine/channels.ts";
import { startSession, withTransaction } from "../packages/runtime/src/engine/index.ts";
import { task } from "../packages/runtime/src/sdk/index.ts";
import { sessions } from "../packages/runtime/src/sdk/namespaces.ts";
import { postJson } from "./http-client.ts";
import { benchDatabase, benchStack, type BenchStack } from "./setup.ts";
import { cpuMsOf, databaseCpu } from "./process-cpu.ts";
import { openSse } from "./sse-client.ts";
import { line, now, percentiles } from "./stats.ts";

/** How runs resumed in the round trips: offered to the worker, claimed on NOTIFY, or through a job. */
export const via: Record<string, number> = {};

/**
 * Where one round trip's time goes (BENCH_SESSIONS_PROFILE=1): the moments each hop ends, by the
 * benchmark process's clock (the worker runs in it; a LISTEN connection of its own hears the
 * NOTIFYs at about the moment the worker and the API do).
 */
interface TurnMarks {
  /** The message this turn sends (the task's replayed turns are not marked). */
  n: number;
  t0: number;
  /** The `.in` append committed (its record notice heard). */
  inCommitted?: number;
  /** The offer NOTIFY heard; `offerBytes` its size, `offerFull` whether it carried the run. */
  offer?: number;
  offerBytes?: number;
  offerFull?: boolean;
  /** The worker's runResumed (the claim in hand, replay starting). */
  resumed?: number;
  /** The task code after its wait: replay done. */
  code?: number;
  /** The `.out` append committed (its record notice heard). */
  outCommitted?: number;
  /** session.out.append resolved (durable: after the WAL flush). */
  appended?: number;
  /** The client's SSE stream had the record. */
  received?: number;
}

/** The turn being measured (one at a time), when profiling. */
let marking: TurnMarks | null = null;

/** The chat task: waits for the next message (a checkpoint), answers it on .out, again. */
const chat = task({
  id: "bench-chat",
  run: async (payload: { sessionId: string }) => {
    const session = sessions.open<{ n: number }, { n: number }>(payload.sessionId);
    for (;;) {
      const message = await session.in.wait<{ n: number }>();
      if (!message.ok) return 0;
      const m = marking?.n === message.output.n ? marking : null;
      if (m) m.code = now();
      await session.out.append({ n: message.output.n });
      if (m) m.appended = now();
    }
  },
});

/** Listens where the round trip's NOTIFYs go (session records, the worker's offers) and marks the turn under way. */
async function listenForMarks(url: string, workerId: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: url, application_name: "svc-bench-profile" });
  await client.connect();
  const offers = CHANNELS.offersPrefix + workerId;
  client.on("notification", (message) => {
    const at = now();
    const m = marking;
    if (!m) return;
    if (message.channel === offers) {
      if (m.offer === undefined) {
        m.offer = at;
        m.offerBytes = Buffer.byteLength(message.payload ?? "");
        m.offerFull = (message.payload ?? "").startsWith('{"run"');
      }
      return;
    }
    const notice = JSON.parse(message.payload ?? "{}") as { io?: string };
    if (notice.io === "in") m.inCommitted ??= at;
    else if (notice.io === "out") m.outCommitted ??= at;
  });
  await client.query(`LISTEN "${CHANNELS.sessionRecords}"`);
  await client.query(`LISTEN "${offers}"`);
  return () => client.end();
}

/** Each hop's p50/p90/p99 over the profiled turns (a hop: from the previous mark to its own). */
function hops(marks: TurnMarks[]): string[] {
  const order: [keyof TurnMarks, string][] = [
    ["inCommitted", "HTTP append → .in committed (notice heard)"],
    ["offer", "→ offer NOTIFY heard"],
    ["resumed", "→ worker: claim in hand (runResumed)"],
    ["code", "→ task code after the wait (replay)"],
    ["outCommitted", "→ .out append committed (notice heard)"],
    ["received", "→ client's SSE stream has it"],
  ];
  const out: string[] = [];
  const complete = marks.filter((m) => order.every(([k]) => typeof m[k] === "number"));
  let previous: keyof TurnMarks = "t0";
  for (const [key, label] of order) {
    const from = previous;
    out.push(line(`  ${label}`, percentiles(complete.map((m) => (m[key] as number) - (m[from] as number)))));
    previous = key;
  }
  out.push(line(`  (.out append called → resolved, durable)`, percentiles(complete.map((m) => m.appended! - m.code!))));
  const full = complete.filter((m) => m.offerFull).length;
  const bytes = percentiles(complete.map((m) => m.offerBytes!));
  out.push(`  offers carrying the run: ${full} of ${complete.length}; offer NOTIFY size p50 ${bytes.p50} B, max ${bytes.max} B`);
  return out;
}

function mb(bytes: number) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) * 1024;
}

async function startChat(stack: BenchStack, externalId: string) {
  const res = await postJson(`${stack.apiUrl}/api/v1/sessions`, JSON.stringify({ type: "chat", externalId, taskIdentifier: "bench-chat", triggerConfig: { basePayload: {} } }), {
    authorization: `Bearer ${stack.project.environments.dev.secretKey}`,
  });
  if (res.status !== 201) throw new Error(`start session: ${res.status} ${res.text}`);
  return JSON.parse(res.text) as { id: string; runId: string; publicAccessToken: string };
}

/**
 * Chat round trips, one at a time: the client appends {n} to .in over HTTP; the run waiting in
 * session.in.wait resumes and appends {n} to .out; the client's open SSE stream receives it.
 * Each session carries `turnsPerSession` turns (every resume replays the turns before it).
 */
async function roundTrips(stack: BenchStack, sessionsCount: number, turnsPerSession: number, label: string, profile = false): Promise<{ latencies: number[]; answered: number[]; stages: number[]; marks: TurnMarks[] }> {
  const latencies: number[] = [];
  const answered: number[] = [];
  const stages: number[] = [];
  const marks: TurnMarks[] = [];
  for (let s = 0; s < sessionsCount; s++) {
    // Nothing else runs here: the next suspension is this session's run reaching its first wait.
    const waiting = stack.worker!.events.next("runSuspended");
    const session = await startChat(stack, `${label}-${s}`);
    await waiting;
    const waiters = new Map<number, (at: number) => void>();
    const sse = await openSse(`${stack.apiUrl}/realtime/v1/sessions/${session.id}/out`, { authorization: `Bearer ${session.publicAccessToken}`, "timeout-seconds": "600" }, (record, at) => {
      const n = (JSON.parse(record.body).data as { n: number }).n;
      waiters.get(n)?.(at);
    });
    for (let turn = 0; turn < turnsPerSession; turn++) {
      const n = s * 1_000_000 + turn;
      const received = new Promise<number>((resolve) => waiters.set(n, resolve));
      const suspended = stack.worker!.events.next("runSuspended", (e) => e.runId === session.runId);
      const resumed = stack.worker!.events.next("runResumed", (e) => e.runId === session.runId).then((e) => {
        via[e.via] = (via[e.via] ?? 0) + 1;
        const at = now();
        if (marking) marking.resumed ??= at;
        return at;
      });
      const t0 = now();
      const m: TurnMarks | null = profile ? { n, t0 } : null;
      marking = m;
      const res = await postJson(`${stack.apiUrl}/realtime/v1/sessions/${session.id}/in/append`, JSON.stringify({ n }), { authorization: `Bearer ${session.publicAccessToken}` });
      answered.push(now() - t0);
      if (res.status !== 200) throw new Error(`append: ${res.status} ${res.text}`);
      const receivedAt = await received;
      latencies.push(receivedAt - t0);
      stages.push((await resumed) - t0);
      // One round trip in the system at a time: the run is waiting again before the next message.
      await suspended;
      if (m) {
        m.received = receivedAt;
        marks.push(m);
        marking = null;
      }
    }
    sse.close();
  }
  return { latencies, answered, stages, marks };
}

/**
 * The CPU the round trips use, per round trip, by process: less sensitive to a shared machine's
 * load than their latency (on 2 cores, what the processes use between them is what they wait for).
 */
async function cpuOfRoundTrips(stack: BenchStack, url: string): Promise<{ stop(turns: number): string }> {
  const database = new URL(url).pathname.slice(1);
  const postgres = await databaseCpu(stack.engine.db, database);
  const api = stack.apiPid ? cpuMsOf(stack.apiPid) : 0;
  const own = process.cpuUsage();
  return {
    stop(turns) {
      const per = (ms: number) => `${(ms / turns).toFixed(2)} ms`;
      const mine = process.cpuUsage(own);
      const apiMs = stack.apiPid ? cpuMsOf(stack.apiPid) - api : 0;
      const pgMs = postgres.stop();
      return `API process ${per(apiMs)}, benchmark process (worker + client) ${per((mine.user + mine.system) / 1000)}, Postgres backends ${per(pgMs)}`;
    },
  };
}

/** N SSE subscribers on one session's .out in the API process: its RSS growth, and one append's delivery to all. */
async function fanOut(stack: BenchStack, subscribers: number): Promise<string[]> {
  const session = await startChat(stack, "fan-out");
  const auth = { authorization: `Bearer ${session.publicAccessToken}`, "timeout-seconds": "600" };
  // Warm-up: a few hundred streams opened and closed, so the API's allocator has its working size.
  const warm = await Promise.all(Array.from({ length: 200 }, () => openSse(`${stack.apiUrl}/realtime/v1/sessions/${session.id}/out`, auth, () => {})));
  for (const w of warm) w.close();
  await new Promise((r) => setTimeout(r, 500));
  const before = rssOf(stack.apiPid!);
  const arrivals: number[] = [];
  const streams = [];
  for (let i = 0; i < subscribers; i += 500) {
    streams.push(...(await Promise.all(Array.from({ length: Math.min(500, subscribers - i) }, () => openSse(`${stack.apiUrl}/realtime/v1/sessions/${session.id}/out`, auth, (_r, at) => arrivals.push(at))))));
  }
  await new Promise((r) => setTimeout(r, 500));
  const withSubscribers = rssOf(stack.apiPid!);
  const t0 = now();
  const res = await postJson(`${stack.apiUrl}/realtime/v1/sessions/${session.id}/out/append`, `{"fan":"out"}`, { authorization: `Bearer ${stack.project.environments.dev.secretKey}` });
  if (res.status !== 200) throw new Error(`append: ${res.status} ${res.text}`);
  while (arrivals.length < subscribers) await new Promise((r) => setTimeout(r, 5));
  const delivery = percentiles(arrivals.map((at) => at - t0));
  for (const s of streams) s.close();
  return [
    `API process RSS: ${mb(before)} → ${mb(withSubscribers)} with ${subscribers.toLocaleString("en-US")} SSE subscribers (+${mb(withSubscribers - before)}, ${((withSubscribers - before) / subscribers / 1024).toFixed(1)} KB each)`,
    line(`one append → all ${subscribers.toLocaleString("en-US")} subscribers`, delivery),
  ];
}

/** N open sessions, each with its run waiting on .in: the worker's RSS, and the rows an idle session costs. */
async function idleSessions(stack: BenchStack, n: number): Promise<string[]> {
  const open = async (count: number, prefix: string) => {
    let suspended = 0;
    let off = () => {};
    const all = new Promise<void>((resolve) => (off = stack.worker!.events.on("runSuspended", () => ++suspended >= count && resolve())));
    for (let i = 0; i < count; i++) {
      await startSession(stack.engine, stack.env, { type: "chat", externalId: `${prefix}-${i}`, taskIdentifier: "bench-chat", triggerConfig: { basePayload: {} } });
    }
    await all;
    off();
  };
  await open(Math.min(1000, n / 10), "idle-warm");
  global.gc?.();
  const before = process.memoryUsage().rss;
  const t0 = now();
  await open(n, "idle");
  const ms = now() - t0;
  global.gc?.();
  const after = process.memoryUsage().rss;
  const { rows } = await stack.engine.db.query(`
    SELECT (SELECT count(*) FROM sessions WHERE external_id LIKE 'idle-%' AND external_id NOT LIKE 'idle-warm-%')::int AS sessions,
           (SELECT count(*) FROM runs WHERE status = 'WAITING')::int AS waiting`);
  const perSession = await withTransaction(stack.engine.db, async (tx) => {
    const { rows: r } = await tx.query(`
      WITH s AS (SELECT id FROM sessions WHERE external_id = 'idle-0'),
           run AS (SELECT run_id FROM session_runs WHERE session_id = (SELECT id FROM s))
      SELECT (SELECT count(*) FROM sessions WHERE id = (SELECT id FROM s)) AS sessions,
             (SELECT count(*) FROM session_runs WHERE session_id = (SELECT id FROM s)) AS session_runs,
             (SELECT count(*) FROM runs WHERE id IN (SELECT run_id FROM run)) AS runs,
             (SELECT count(*) FROM run_attempts WHERE run_id IN (SELECT run_id FROM run)) AS run_attempts,
             (SELECT count(*) FROM run_ledger WHERE run_id IN (SELECT run_id FROM run)) AS run_ledger,
             (SELECT count(*) FROM session_waits WHERE session_id = (SELECT id FROM s)) AS session_waits,
             (SELECT count(*) FROM waitpoints w JOIN session_waits sw ON sw.waitpoint_id = w.id WHERE sw.session_id = (SELECT id FROM s)) AS waitpoints`);
    return r[0] as Record<string, string>;
  });
  return [
    `${rows[0].sessions.toLocaleString("en-US")} sessions opened, each run to its first session.in.wait and suspended, in ${(ms / 1000).toFixed(1)} s; WAITING runs: ${rows[0].waiting}`,
    `worker process RSS ${mb(before)} → ${mb(after)} (${after >= before ? "+" : ""}${mb(after - before)})${global.gc ? " (after forced GC)" : ""}`,
    `rows per idle session: ${Object.entries(perSession).map(([table, count]) => `${table} ${count}`).join(", ")}`,
  ];
}

export async function sessionsScenario(embedded: { url: string } | undefined, options: { turns: number; turnsPerSession: number; subscribers: number; idle: number; profile?: boolean }) {
  const db = await benchDatabase("sessions", embedded);
  const stack = await benchStack(db.url, { tasks: [chat], api: true, concurrency: 50 });
  const out = [`## Sessions (issue #15)`];
  try {
    await roundTrips(stack, 4, 50, "warm");
    const sessionsCount = Math.max(1, Math.ceil(options.turns / options.turnsPerSession));
    const stopMarks = options.profile ? await listenForMarks(db.url, stack.worker!.id) : null;
    const cpu = await cpuOfRoundTrips(stack, db.url);
    const { latencies, answered, stages, marks } = await roundTrips(stack, sessionsCount, options.turnsPerSession, "chat", options.profile);
    const used = cpu.stop(latencies.length);
    await stopMarks?.();
    out.push(line(`chat round trip, one at a time (${options.turnsPerSession} turns per session)`, percentiles(latencies)));
    out.push(`  CPU per round trip: ${used}`);
    out.push(line(`  the same appends to .in, HTTP → 200 received`, percentiles(answered)));
    out.push(line(`  the same appends to .in, HTTP → run resumed`, percentiles(stages)) + `  (${Object.entries(via).map(([k, v]) => `${k} ${v}`).join(", ")})`);
    const late = latencies.filter((_, i) => i % options.turnsPerSession >= options.turnsPerSession - 10);
    out.push(line(`  the last 10 turns of each session`, percentiles(late)));
    if (options.profile) out.push(`  where the time goes (BENCH_SESSIONS_PROFILE=1), hop by hop:`, ...hops(marks));
    if (options.subscribers > 0) out.push(...(await fanOut(stack, options.subscribers)));
    if (options.idle > 0) out.push(...(await idleSessions(stack, options.idle)));
  } finally {
    await stack.close();
    await db.close();
  }
  return out;
}
