import { completeToken, createToken, triggerRun, withTransaction } from "../packages/runtime/src/engine/index.ts";
import { forToken, step, task } from "../packages/runtime/src/sdk/index.ts";
import { benchDatabase, benchStack } from "./setup.ts";
import { now } from "./stats.ts";

const marks = new Map<string, (at: number) => void>();
const stepper = task({
  id: "bench-replay",
  run: async (payload: { tokenId: string; steps: number }) => {
    for (let i = 0; i < payload.steps; i++) await step.run(`s${i}`, () => i);
    await forToken(payload.tokenId);
    marks.get(payload.tokenId)?.(now());
    return payload.steps;
  },
});

/** Resume time with K resolved steps before the wait; the slope is the cost per replayed entry. */
export async function replayScenario(embedded: { url: string } | undefined) {
  const db = await benchDatabase("replay", embedded);
  const stack = await benchStack(db.url, { tasks: [stepper], concurrency: 10 });
  const out = ["## Replay cost (issue #3): resume → code after the wait, with K resolved ledger entries to replay (median of 20)"];
  const medians: [number, number][] = [];
  for (const k of [0, 10, 100, 1000]) {
    const samples: number[] = [];
    for (let i = 0; i < 20; i++) {
      const { waitpoint } = await createToken(stack.engine, stack.env.id, { timeout: "1h" });
      const { id } = await triggerRun(stack.engine, stack.env, "bench-replay", { tokenId: waitpoint.id, steps: k });
      await stack.worker!.events.next("runSuspended", (e) => e.runId === id, 120_000);
      const mark = new Promise<number>((resolve) => marks.set(waitpoint.id, resolve));
      await withTransaction(stack.engine.db, (tx) => completeToken(stack.engine, tx, waitpoint.id, {}));
      const acked = now();
      samples.push((await mark) - acked);
    }
    samples.sort((a, b) => a - b);
    const median = samples[10]!;
    medians.push([k, median]);
    out.push(`K = ${String(k).padEnd(5)} COMMIT ack → code p50 ${median.toFixed(2)} ms`);
  }
  const [k0, m0] = medians[0]!;
  const [k1, m1] = medians[medians.length - 1]!;
  out.push(`replay cost per resolved entry ≈ ${(((m1 - m0) / (k1 - k0)) * 1000).toFixed(1)} µs (load + replay, from K=${k0} to K=${k1})`);
  await stack.close();
  await db.close();
  return out;
}
