import { completeToken, createToken, triggerRunsInTransaction, withTransaction } from "../packages/runtime/src/engine/index.ts";
import { forToken, task } from "../packages/runtime/src/sdk/index.ts";
import { benchDatabase, benchStack, type BenchStack } from "./setup.ts";
import { now, rate } from "./stats.ts";

const RUNS_PER_TOKEN = 100;
const waiter = task({
  id: "bench-suspend",
  run: async (payload: { tokenId: string; pad: number[] }) => {
    const held = payload.pad.map((x) => x * 2); // state held across the wait, as real code would
    await forToken(payload.tokenId);
    return held.length;
  },
});

function mb(bytes: number) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** N runs suspended at once in one worker: RSS before/after, then complete everything and drain. */
export async function suspendedScenario(embedded: { url: string } | undefined, n: number) {
  const db = await benchDatabase("suspended", embedded);
  const stack = await benchStack(db.url, { tasks: [waiter], concurrency: 200, poolMax: 40 });
  // The process triggers the runs too (it is the API here): one warm-up round of a tenth as many
  // runs, suspended and drained, brings its allocator and JIT to their working size first, so that
  // "before" is that working size and the growth measured is what the waiting runs hold.
  const warmUp = Math.min(10_000, Math.ceil(n / 10));
  await suspendAndDrain(stack, await tokensFor(stack, warmUp), warmUp);
  const tokens = await tokensFor(stack, n);
  global.gc?.();
  const before = process.memoryUsage();
  const { suspendMs, triggeredMs } = await suspendAll(stack, tokens, n);
  global.gc?.();
  const after = process.memoryUsage();
  const { rows } = await stack.engine.db.query(`SELECT count(*)::int AS n FROM runs WHERE status = 'WAITING'`);
  const { completedMs, drainMs } = await drainAll(stack, tokens, n);
  global.gc?.();
  const end = process.memoryUsage();
  await stack.close();
  await db.close();
  return [
    `## Suspended capacity (issue #3): ${n.toLocaleString("en-US")} runs waiting at once in one worker (${RUNS_PER_TOKEN} runs per token; after a warm-up round of ${warmUp.toLocaleString("en-US")})`,
    `triggered in ${(triggeredMs / 1000).toFixed(1)} s; all suspended after ${(suspendMs / 1000).toFixed(1)} s (${rate(n, suspendMs)}); WAITING rows: ${rows[0].n}`,
    `worker process RSS before ${mb(before.rss)}, with ${n.toLocaleString("en-US")} suspended ${mb(after.rss)} (${after.rss >= before.rss ? "+" : ""}${mb(after.rss - before.rss)}); heap ${mb(before.heapUsed)} → ${mb(after.heapUsed)}${global.gc ? " (after forced GC)" : ""}`,
    `completed ${tokens.length} tokens in ${(completedMs / 1000).toFixed(1)} s; drained all ${n.toLocaleString("en-US")} runs to COMPLETED in ${(drainMs / 1000).toFixed(1)} s (${rate(n, drainMs)}); RSS after drain ${mb(end.rss)}`,
  ];
}

async function tokensFor(stack: BenchStack, runs: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < Math.ceil(runs / RUNS_PER_TOKEN); i++) tokens.push((await createToken(stack.engine, stack.env.id, { timeout: "24h" })).waitpoint.id);
  return tokens;
}

async function suspendAndDrain(stack: BenchStack, tokens: string[], n: number) {
  await suspendAll(stack, tokens, n);
  await drainAll(stack, tokens, n);
}

/** Triggers n runs, RUNS_PER_TOKEN per token, and waits until all are suspended. */
async function suspendAll(stack: BenchStack, tokens: string[], n: number) {
  let suspended = 0;
  let off = () => {};
  const allSuspended = new Promise<void>((resolve) => (off = stack.worker!.events.on("runSuspended", () => ++suspended >= n && resolve())));
  const t0 = now();
  for (let i = 0; i < n; i += 1000) {
    await withTransaction(stack.engine.db, (tx) =>
      triggerRunsInTransaction(
        stack.engine,
        tx,
        stack.env,
        Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({
          taskIdentifier: "bench-suspend",
          payload: { tokenId: tokens[Math.floor((i + k) / RUNS_PER_TOKEN)], pad: Array.from({ length: 16 }, (_, x) => x) },
        })),
      ),
    );
  }
  const triggeredMs = now() - t0;
  await allSuspended;
  off();
  return { triggeredMs, suspendMs: now() - t0 };
}

/** Completes the tokens one by one and waits until all n runs finished. */
async function drainAll(stack: BenchStack, tokens: string[], n: number) {
  let finished = 0;
  let off = () => {};
  const allFinished = new Promise<void>((resolve) => (off = stack.worker!.events.on("runFinished", () => ++finished >= n && resolve())));
  const t1 = now();
  for (const token of tokens) await withTransaction(stack.engine.db, (tx) => completeToken(stack.engine, tx, token, {}));
  const completedMs = now() - t1;
  await allFinished;
  off();
  return { completedMs, drainMs: now() - t1 };
}
