import http from "node:http";
import { readFileSync } from "node:fs";
import { metadata, task } from "../packages/runtime/src/sdk/index.ts";
import { request } from "./http-client.ts";
import { suspendedRuns, waiter } from "./resume-latency.ts";
import { benchDatabase, benchStack, type BenchStack } from "./setup.ts";
import { line, now, percentiles } from "./stats.ts";

/** Agents of their own: thousands of live requests must not queue behind the bench's keep-alive agent. */
const liveAgent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

/** The cost of each `metadata.set` call, and of one `metadata.flush()`, measured inside the run. */
const calls: number[] = [];
const flushes: number[] = [];
const setter = task({
  id: "bench-metadata-set",
  run: async (payload: { sets: number; flushEvery: number }) => {
    for (let i = 0; i < payload.sets; i++) {
      const t0 = now();
      metadata.set("progress", i).increment("count");
      calls.push(now() - t0);
      if ((i + 1) % payload.flushEvery === 0) {
        const f0 = now();
        await metadata.flush();
        flushes.push(now() - f0);
      }
    }
    return 1;
  },
});

function mb(bytes: number) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function rssOf(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
}

interface ShapeAnswer {
  status: number;
  offset: string;
  handle: string;
  rows: { value?: Record<string, string | null> }[];
  text: string;
}

function getShape(url: string, headers: Record<string, string>, signal?: AbortSignal): Promise<ShapeAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: liveAgent, headers, signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        resolve({
          status: res.statusCode ?? 0,
          offset: String(res.headers["electric-offset"] ?? ""),
          handle: String(res.headers["electric-handle"] ?? ""),
          rows: res.statusCode === 200 ? (JSON.parse(text) as ShapeAnswer["rows"]) : [],
          text,
        });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
  });
}

/**
 * What `runs.subscribeToRun` does on the wire: the snapshot, then live long polls from the last
 * offset, each answer passed to `onRows` with the time it arrived. Stops after `close()`.
 */
async function subscribe(stack: BenchStack, runId: string, onRows: (rows: ShapeAnswer["rows"], at: number) => void): Promise<{ close(): void }> {
  const base = `${stack.apiUrl}/realtime/v1/runs/${runId}`;
  const headers = { authorization: `Bearer ${stack.project.environments.dev.secretKey}`, "x-trigger-electric-version": "1.0.0-beta.1" };
  let answer = await getShape(`${base}?offset=-1`, headers);
  if (answer.status !== 200) throw new Error(`subscribe: ${answer.status} ${answer.text}`);
  const closed = new AbortController();
  void (async () => {
    while (!closed.signal.aborted) {
      const next = await getShape(`${base}?offset=${answer.offset}&handle=${encodeURIComponent(answer.handle)}&live=true`, headers, closed.signal);
      const at = now();
      if (next.status !== 200) throw new Error(`live request: ${next.status} ${next.text}`);
      answer = next;
      onRows(next.rows, at);
    }
  })().catch((error: unknown) => {
    if (!closed.signal.aborted) throw error;
  });
  return { close: () => closed.abort() };
}

const progressOf = (rows: ShapeAnswer["rows"]) =>
  rows.flatMap((r) => (r.value?.metadata ? [(JSON.parse(r.value.metadata) as { n?: number }).n] : [])).filter((n): n is number => n !== undefined);

async function putMetadata(stack: BenchStack, runId: string, n: number) {
  const res = await request(`${stack.apiUrl}/api/v1/runs/${runId}/metadata`, {
    method: "PUT",
    headers: { authorization: `Bearer ${stack.project.environments.dev.secretKey}`, "content-type": "application/json" },
    body: JSON.stringify({ metadata: { n } }),
  });
  if (res.status !== 200) throw new Error(`metadata: ${res.status} ${res.text}`);
}

/** One subscriber on a waiting run; the backend sets its metadata, one change at a time. */
async function updateToSubscriber(stack: BenchStack, runId: string, updates: number, answered: number[] = [], afterAnswer: number[] = []): Promise<number[]> {
  const arrivals = new Map<number, (at: number) => void>();
  const sub = await subscribe(stack, runId, (rows, at) => {
    for (const n of progressOf(rows)) arrivals.get(n)?.(at);
  });
  const samples: number[] = [];
  try {
    for (let n = 1; n <= updates; n++) {
      const arrived = new Promise<number>((resolve) => arrivals.set(n, resolve));
      const t0 = now();
      await putMetadata(stack, runId, n);
      const t1 = now();
      answered.push(t1 - t0);
      const at = await arrived;
      samples.push(at - t0);
      afterAnswer.push(at - t1);
      await new Promise((r) => setTimeout(r, Math.random() * 3));
    }
  } finally {
    sub.close();
  }
  return samples;
}

/** N live subscribers spread over runs of `perRun` each: the API's RSS, and one change → its run's subscribers. */
async function manySubscribers(stack: BenchStack, runIds: string[], subscribers: number): Promise<string[]> {
  const before = rssOf(stack.apiPid!);
  const perRun = Math.ceil(subscribers / runIds.length);
  const target = runIds[0]!;
  const arrivals: number[] = [];
  let marker = 0;
  const subs = [];
  for (let i = 0; i < subscribers; i += 250) {
    subs.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(250, subscribers - i) }, (_, j) => {
          const runId = runIds[Math.floor((i + j) / perRun)]!;
          return subscribe(stack, runId, (rows, at) => {
            if (runId === target && marker > 0 && progressOf(rows).includes(marker)) arrivals.push(at);
          });
        }),
      )),
    );
  }
  await new Promise((r) => setTimeout(r, 1000));
  const withSubscribers = rssOf(stack.apiPid!);
  marker = 1_000_000;
  const t0 = now();
  await putMetadata(stack, target, marker);
  const deadline = Date.now() + 30_000;
  while (arrivals.length < perRun && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  for (const s of subs) s.close();
  return [
    `API process RSS: ${mb(before)} → ${mb(withSubscribers)} with ${subscribers.toLocaleString("en-US")} live run subscriptions over ${runIds.length} runs (+${mb(withSubscribers - before)}, ${((withSubscribers - before) / subscribers / 1024).toFixed(1)} KB each; goal ≤ +300 MB for 10,000)`,
    line(`one change → its run's ${perRun} subscribers (${arrivals.length} got it)`, percentiles(arrivals.map((at) => at - t0))),
  ];
}

/** The run's code calls metadata.set; what each call and each flush cost there. */
async function metadataInRun(stack: BenchStack, sets: number): Promise<string[]> {
  calls.length = 0;
  flushes.length = 0;
  const done = stack.worker!.events.next("runFinished", () => true, 120_000);
  const res = await request(`${stack.apiUrl}/api/v1/tasks/bench-metadata-set/trigger`, {
    method: "POST",
    headers: { authorization: `Bearer ${stack.project.environments.dev.secretKey}`, "content-type": "application/json" },
    body: JSON.stringify({ payload: { sets, flushEvery: 10 } }),
  });
  if (res.status !== 200) throw new Error(`trigger: ${res.status} ${res.text}`);
  await done;
  return [
    line(`metadata.set(…).increment(…) in a run (goal p50 ≤ 0.5 ms)`, percentiles(calls)),
    line(`  metadata.flush() of 10 such changes`, percentiles(flushes)),
  ];
}

export async function realtimeScenario(embedded: { url: string } | undefined, options: { updates: number; subscribers: number; sets: number }) {
  const db = await benchDatabase("realtime", embedded);
  const stack = await benchStack(db.url, { tasks: [waiter, setter], api: true, concurrency: 50 });
  const out = [`## Realtime runs and metadata (issue 34)`];
  try {
    const runIds = await waitingRunIds(stack, Math.max(1, Math.ceil(options.subscribers / 100)));
    await updateToSubscriber(stack, runIds[0]!, 50);
    const answered: number[] = [];
    const afterAnswer: number[] = [];
    out.push(line(`metadata PUT (HTTP) → a subscriber has it`, percentiles(await updateToSubscriber(stack, runIds[0]!, options.updates, answered, afterAnswer))));
    out.push(line(`  the same PUTs → 200 received (committed)`, percentiles(answered)));
    out.push(line(`  the 200 → the subscriber has it`, percentiles(afterAnswer)) + "  (goal p50 ≤ 5 ms: a committed change → subscribers)");
    out.push(...(await metadataInRun(stack, options.sets)));
    if (options.subscribers > 0) out.push(...(await manySubscribers(stack, runIds, options.subscribers)));
  } finally {
    await stack.close();
    await db.close();
  }
  return out;
}

/** `n` runs waiting on tokens (alive, changeable, costing no worker slot). */
async function waitingRunIds(stack: BenchStack, n: number): Promise<string[]> {
  await suspendedRuns(stack, n);
  const { rows } = await stack.engine.db.query<{ id: string }>("SELECT id FROM runs WHERE status = 'WAITING' AND task_identifier = 'bench-wait' ORDER BY created_at LIMIT $1", [n]);
  return rows.map((r) => r.id);
}
