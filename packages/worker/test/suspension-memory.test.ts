import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToken, triggerRunsInTransaction, withTransaction } from "@svc/runtime/engine";
import { forToken, task } from "@svc/runtime/sdk";
import { startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

// "Nothing per waiting run stays in the worker": the state a task holds across a wait must be
// garbage once the run is suspended. Each run registers an object it holds across the wait with a
// FinalizationRegistry; after a forced GC every one of them must have been collected.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const N = 300;
let collected = 0;
const registry = new FinalizationRegistry(() => collected++);

const holder = task({
  id: "holder",
  run: async (payload: { tokenId: string }) => {
    const held = { big: new Array(1000).fill(payload.tokenId) };
    registry.register(held, payload.tokenId);
    await forToken(payload.tokenId);
    return held.big.length;
  },
});

let te: TestEngine;
let tw: TestWorker;
beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [holder], { concurrency: 50 });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("a suspended run holds nothing in the worker", () => {
  it("lets the garbage collector reclaim everything a task held across its wait", async () => {
    const { waitpoint } = await createToken(te.engine, te.env.id, { timeout: "1h" });
    let suspended = 0;
    const all = new Promise<void>((resolve) => tw.worker.events.on("runSuspended", () => ++suspended >= N && resolve()));
    await withTransaction(te.db.pool, (tx) =>
      triggerRunsInTransaction(te.engine, tx, te.env, Array.from({ length: N }, () => ({ taskIdentifier: "holder", payload: { tokenId: waitpoint.id } }))),
    );
    await all;
    for (let i = 0; i < 20 && collected < N; i++) {
      gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(collected).toBe(N);
  });
});
