import { createToken, triggerRunInTransaction, withTransaction } from "../packages/runtime/src/engine/index.ts";
import { forToken, task } from "../packages/runtime/src/sdk/index.ts";
import { benchDatabase, benchStack, type BenchStack } from "./setup.ts";
import { line, percentiles } from "./stats.ts";

const resumedAt = new Map<string, number>();
export const timeoutWaiter = task({
  id: "bench-timeout",
  run: async (payload: { tokenId: string }) => {
    const result = await forToken(payload.tokenId);
    resumedAt.set(payload.tokenId, Date.now());
    return result.ok;
  },
});

/** Tokens with timeouts spread over the next seconds; lateness = code after the wait ran − timeoutAt. */
export async function timeoutScenario(embedded: { url: string } | undefined, n: number) {
  const db = await benchDatabase("timeouts", embedded);
  const stack = await benchStack(db.url, { tasks: [timeoutWaiter], concurrency: 100 });
  const lateness = await timeoutLateness(stack, n);
  await stack.close();
  await db.close();
  return [`## Timeout lateness (issue #3): ${n} tokens timing out over 5 s; code after the wait ran − timeoutAt`, line("timeout lateness", percentiles(lateness))];
}

/**
 * `n` runs of `bench-timeout` (the stack's worker must have timeoutWaiter), each waiting on a token
 * timing out 3–8 s from now; once every one has resumed, each one's lateness in ms.
 */
export async function timeoutLateness(stack: BenchStack, n: number): Promise<number[]> {
  const tokens: { id: string; timeoutAt: number }[] = [];
  // Not every run need suspend: on a busy machine one may reach its wait after the timeout.
  const allFinished = countEvents(stack, "runFinished", n);
  const base = Date.now() + 3000;
  await withTransaction(stack.engine.db, async (tx) => {
    for (let i = 0; i < n; i++) {
      const at = new Date(base + Math.floor(Math.random() * 5000));
      const { waitpoint } = await createToken(stack.engine, stack.env.id, { timeout: at });
      tokens.push({ id: waitpoint.id, timeoutAt: at.getTime() });
      await triggerRunInTransaction(stack.engine, tx, stack.env, "bench-timeout", { tokenId: waitpoint.id });
    }
  });
  await allFinished;
  return tokens.map((t) => resumedAt.get(t.id)! - t.timeoutAt);
}

function countEvents(stack: BenchStack, event: "runFinished", n: number): Promise<void> {
  let seen = 0;
  return new Promise<void>((resolve) => {
    const off = stack.worker!.events.on(event, () => {
      if (++seen >= n) {
        off();
        resolve();
      }
    });
  });
}
