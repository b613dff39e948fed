import { completeToken, createToken, triggerRunsInTransaction, withTransaction } from "../packages/runtime/src/engine/index.ts";
import { forToken, task } from "../packages/runtime/src/sdk/index.ts";
import { benchDatabase, benchStack } from "./setup.ts";
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
  const tokenCount = Math.ceil(n / RUNS_PER_TOKEN);
  const tokens: string[] = [];
  for (let i = 0; i < tokenCount; i++) tokens.push((await createToken(stack.engine, stack.env.id, { timeout: "24h" })).waitpoint.id);
  global.gc?.();
  const before = process.memoryUsage();
  let suspended = 0;
  const allSuspended = new Promise<void>((resolve) => stack.worker!.events.on("runSuspended", () => ++suspended >= n && resolve()));
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
    if (i % 20_000 === 0) await stack.engine.db.query("ANALYZE pgboss.job").catch(() => {});
  }
  const triggeredMs = now() - t0;
  await allSuspended;
  const suspendMs = now() - t0;
  global.gc?.();
  const after = process.memoryUsage();
  const { rows } = await stack.engine.db.query(`SELECT count(*)::int AS n FROM runs WHERE status = 'WAITING'`);
  let finished = 0;
  const allFinished = new Promise<void>((resolve) => stack.worker!.events.on("runFinished", () => ++finished >= n && resolve()));
  const t1 = now();
  for (const token of tokens) await withTransaction(stack.engine.db, (tx) => completeToken(stack.engine, tx, token, {}));
  const completedMs = now() - t1;
  await allFinished;
  const drainMs = now() - t1;
  global.gc?.();
  const end = process.memoryUsage();
  await stack.close();
  await db.close();
  return [
    `## Suspended capacity (issue #3): ${n.toLocaleString("en-US")} runs waiting at once in one worker (${RUNS_PER_TOKEN} runs per token)`,
    `triggered in ${(triggeredMs / 1000).toFixed(1)} s; all suspended after ${(suspendMs / 1000).toFixed(1)} s (${rate(n, suspendMs)}); WAITING rows: ${rows[0].n}`,
    `worker process RSS before ${mb(before.rss)}, with ${n.toLocaleString("en-US")} suspended ${mb(after.rss)} (${after.rss >= before.rss ? "+" : ""}${mb(after.rss - before.rss)}); heap ${mb(before.heapUsed)} → ${mb(after.heapUsed)}${global.gc ? " (after forced GC)" : ""}`,
    `completed ${tokenCount} tokens in ${(completedMs / 1000).toFixed(1)} s; drained all ${n.toLocaleString("en-US")} runs to COMPLETED in ${(drainMs / 1000).toFixed(1)} s (${rate(n, drainMs)}); RSS after drain ${mb(end.rss)}`,
  ];
}
