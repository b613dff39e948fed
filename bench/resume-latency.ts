import { completeToken, createToken, triggerRunInTransaction, withTransaction } from "../packages/runtime/src/engine/index.ts";
import { forToken, task, triggerAndWait } from "../packages/runtime/src/sdk/index.ts";
import { postJson } from "./http-client.ts";
import { benchDatabase, benchStack, type BenchStack } from "./setup.ts";
import { line, now, percentiles } from "./stats.ts";

/** Resolvers keyed by token id: the task calls them right after its wait returns. */
const marks = new Map<string, (at: number) => void>();
export const waiter = task({
  id: "bench-wait",
  run: async (payload: { tokenId: string }) => {
    await forToken(payload.tokenId);
    marks.get(payload.tokenId)?.(performance.now());
    return 1;
  },
});

/** When each child returned, and when its parent's code after triggerAndWait ran (by child key). */
const childReturned = new Map<string, number>();
const parentContinued = new Map<string, (at: number) => void>();
const child = task({
  id: "bench-child",
  run: async (payload: { key: string }) => {
    childReturned.set(payload.key, performance.now());
    return 1;
  },
});
const parent = task({
  id: "bench-parent",
  run: async (payload: { key: string }) => {
    await triggerAndWait("bench-child", { key: payload.key });
    parentContinued.get(payload.key)?.(performance.now());
    return 1;
  },
});

/** N runs suspended on N fresh tokens, returned in order. */
export async function suspendedRuns(stack: BenchStack, n: number): Promise<string[]> {
  const tokens: string[] = [];
  let suspended = 0;
  const all = new Promise<void>((resolve) => {
    const off = stack.worker!.events.on("runSuspended", () => {
      if (++suspended >= n) {
        off();
        resolve();
      }
    });
  });
  for (let i = 0; i < n; i += 200) {
    await withTransaction(stack.engine.db, async (tx) => {
      for (let j = i; j < Math.min(n, i + 200); j++) {
        const { waitpoint } = await createToken(stack.engine, stack.env.id, { timeout: "1h" });
        tokens.push(waitpoint.id);
        await triggerRunInTransaction(stack.engine, tx, stack.env, "bench-wait", { tokenId: waitpoint.id });
      }
    });
  }
  await all;
  return tokens;
}

export function markFor(tokenId: string): Promise<number> {
  return new Promise((resolve) => marks.set(tokenId, resolve));
}

export async function completeOverHttp(stack: BenchStack, tokenId: string) {
  const res = await postJson(`${stack.apiUrl}/api/v1/waitpoints/tokens/${tokenId}/complete`, '{"data":{"ok":true}}', {
    authorization: `Bearer ${stack.project.environments.dev.secretKey}`,
  });
  if (res.status !== 200) throw new Error(`complete failed: ${res.status} ${res.text}`);
}

async function lanes<T>(items: T[], width: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => { while (next < items.length) await fn(items[next++]!); }));
}

/**
 * One at a time means one resume in the system at a time: the next completion is sent once the
 * previous run has finished (its COMPLETED write included), after a random pause of 0–3 ms.
 */
export async function settle(finished: Promise<unknown>) {
  await finished;
  await new Promise((r) => setTimeout(r, Math.random() * 3));
}

/**
 * Completes the tokens over HTTP one at a time (the stack's task `bench-wait` waits on each), while
 * `keepGoing()`: completion sent → the code after the wait ran, and → the API's 200 received.
 */
export async function resumesOverHttp(stack: BenchStack, tokens: string[], keepGoing: () => boolean = () => true): Promise<{ http: number[]; answered: number[] }> {
  const http: number[] = [];
  const answered: number[] = [];
  for (const t of tokens) {
    if (!keepGoing()) break;
    const m = markFor(t);
    const finished = stack.worker!.events.next("runFinished");
    const t0 = now();
    await completeOverHttp(stack, t);
    answered.push(now() - t0);
    http.push((await m) - t0);
    await settle(finished);
  }
  return { http, answered };
}

export async function resumeLatencyScenario(embedded: { url: string } | undefined, n: number, warmUp: number) {
  const db = await benchDatabase("resume", embedded);
  const stack = await benchStack(db.url, { tasks: [waiter, parent, child], api: true, concurrency: 50 });
  const out = [`## Resume latency (issue #3): token completed → the task code after the wait runs (${n} waits each, after ${warmUp} warm-up resumes)`];
  const via: Record<string, number> = { offer: 0, "fast-path": 0, claimed: 0 };
  stack.worker!.events.on("runResumed", (e) => via[e.via] = (via[e.via] ?? 0) + 1);
  // Warm-up: JIT-compiles the API's and the worker's hot paths (steady state is what is measured).
  await resumesOverHttp(stack, await suspendedRuns(stack, warmUp));

  // One at a time, completion over HTTP (keep-alive) → code.
  const { http, answered } = await resumesOverHttp(stack, await suspendedRuns(stack, n));
  out.push(line("one at a time, HTTP /complete → code", percentiles(http)));
  // The answer waits for the completion's WAL flush; the resume does not (see the README).
  out.push(line("  the same completions, HTTP → 200 received", percentiles(answered)));
  if (process.env.BENCH_QUARTERS) for (let q = 0; q < 4; q++) out.push(line(`  quarter ${q + 1}`, percentiles(http.slice((q * http.length) / 4, ((q + 1) * http.length) / 4))));

  // One at a time, in-process completeToken: COMMIT acknowledged → code.
  const commitTokens = await suspendedRuns(stack, n);
  const commit: number[] = [];
  for (const t of commitTokens) {
    const m = markFor(t);
    const finished = stack.worker!.events.next("runFinished");
    await withTransaction(stack.engine.db, (tx) => completeToken(stack.engine, tx, t, { ok: true }));
    const acked = now();
    commit.push((await m) - acked);
    await settle(finished);
  }
  out.push(line("one at a time, COMMIT ack → code", percentiles(commit)));

  // 16 concurrent lanes over HTTP, after a warm-up in 16 lanes: the first concurrent completions
  // open the API's and the worker's extra pool connections (and compile the completion function
  // in each), one-time costs of ~0.5 s that would otherwise be the p99.
  const laneWarm = await suspendedRuns(stack, 160);
  await lanes(laneWarm, 16, async (t) => { const m = markFor(t); await completeOverHttp(stack, t); await m; });
  const laneTokens = await suspendedRuns(stack, n);
  const concurrent: number[] = [];
  const t16 = now();
  await lanes(laneTokens, 16, async (t) => {
    const m = markFor(t);
    const t0 = now();
    await completeOverHttp(stack, t);
    concurrent.push((await m) - t0);
  });
  const elapsed = now() - t16;
  out.push(line("16 concurrent, HTTP /complete → code", percentiles(concurrent)) + `  (${Math.round((n / elapsed) * 1000)} resumes/s)`);
  // One at a time: a child run returns → its parent's code after triggerAndWait runs.
  const childToParent: number[] = [];
  for (let i = 0; i < Math.min(n, 500) + 50; i++) {
    const key = `k${i}`;
    const continued = new Promise<number>((resolve) => parentContinued.set(key, resolve));
    // Both runs finished (the child, then the parent) before the next pair starts.
    let ended = 0;
    const bothFinished = new Promise<void>((resolve) => {
      const off = stack.worker!.events.on("runFinished", () => {
        if (++ended === 2) {
          off();
          resolve();
        }
      });
    });
    await withTransaction(stack.engine.db, (tx) => triggerRunInTransaction(stack.engine, tx, stack.env, "bench-parent", { key }));
    const at = await continued;
    if (i >= 50) childToParent.push(at - childReturned.get(key)!);
    await settle(bothFinished);
  }
  out.push(line("one at a time, child returns → parent continues", percentiles(childToParent)));

  out.push(`resumed by an offer to the worker: ${via.offer}, through the NOTIFY fast path: ${via["fast-path"]}, claimed from \`runs\`: ${via.claimed}`);
  await stack.close();
  await db.close();
  return out;
}
