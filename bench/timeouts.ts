import { createToken, triggerRunInTransaction, withTransaction } from "../packages/runtime/src/engine/index.ts";
import { forToken, task } from "../packages/runtime/src/sdk/index.ts";
import { benchDatabase, benchStack } from "./setup.ts";
import { line, percentiles } from "./stats.ts";

const resumedAt = new Map<string, number>();
const waiter = task({
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
  const stack = await benchStack(db.url, { tasks: [waiter], concurrency: 100 });
  const tokens: { id: string; timeoutAt: number }[] = [];
  let suspended = 0;
  const allSuspended = new Promise<void>((resolve) => stack.worker!.events.on("runSuspended", () => ++suspended >= n && resolve()));
  const base = Date.now() + 3000;
  await withTransaction(stack.engine.db, async (tx) => {
    for (let i = 0; i < n; i++) {
      const at = new Date(base + Math.floor(Math.random() * 5000));
      const { waitpoint } = await createToken(stack.engine, stack.env.id, { timeout: at });
      tokens.push({ id: waitpoint.id, timeoutAt: at.getTime() });
      await triggerRunInTransaction(stack.engine, tx, stack.env, "bench-timeout", { tokenId: waitpoint.id });
    }
  });
  await allSuspended;
  let finished = 0;
  await new Promise<void>((resolve) => stack.worker!.events.on("runFinished", () => ++finished >= n && resolve()));
  const lateness = tokens.map((t) => resumedAt.get(t.id)! - t.timeoutAt);
  await stack.close();
  await db.close();
  return [`## Timeout lateness (issue #3): ${n} tokens timing out over 5 s; code after the wait ran − timeoutAt`, line("timeout lateness", percentiles(lateness))];
}
