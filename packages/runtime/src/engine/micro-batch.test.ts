import { describe, expect, it } from "vitest";
import { MicroBatcher } from "./micro-batch.ts";

/** A batch call that ends when the test says so. */
function gatedRun() {
  const calls: number[][] = [];
  const gates: (() => void)[] = [];
  const run = (items: number[]) => {
    calls.push(items);
    return new Promise<number[]>((resolve) => gates.push(() => resolve(items.map((i) => i * 10))));
  };
  return { calls, gates, run };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("MicroBatcher", () => {
  it("groups the calls of one turn into one batch, results in order", async () => {
    const { calls, gates, run } = gatedRun();
    const batcher = new MicroBatcher(run);
    const results = [batcher.add(1), batcher.add(2), batcher.add(3)];
    await turn();
    expect(calls).toEqual([[1, 2, 3]]);
    gates[0]!();
    expect(await Promise.all(results)).toEqual([10, 20, 30]);
  });

  it("without maxInFlight, sends each turn's calls at once, however many batches are under way", async () => {
    const { calls, gates, run } = gatedRun();
    const batcher = new MicroBatcher(run);
    const first = batcher.add(1);
    await turn();
    const second = batcher.add(2);
    await turn();
    expect(calls).toEqual([[1], [2]]);
    gates.forEach((open) => open());
    expect(await Promise.all([first, second])).toEqual([10, 20]);
  });

  it("with maxInFlight, holds calls made while the batches under way run and sends them together when one ends", async () => {
    const { calls, gates, run } = gatedRun();
    const batcher = new MicroBatcher(run, 500, "immediate", { maxInFlight: 1 });
    const first = batcher.add(1);
    await turn();
    const later = [batcher.add(2)];
    await turn();
    later.push(batcher.add(3));
    await turn();
    expect(calls).toEqual([[1]]);
    gates[0]!();
    expect(await first).toBe(10);
    await turn();
    expect(calls).toEqual([[1], [2, 3]]);
    gates[1]!();
    expect(await Promise.all(later)).toEqual([20, 30]);
  });

  it("splits what piled up into batches of at most `max`, and rejects a failed batch's calls alone", async () => {
    const calls: number[][] = [];
    let fail = true;
    const batcher = new MicroBatcher(async (items: number[]) => {
      calls.push(items);
      if (fail) {
        fail = false;
        throw new Error("refused");
      }
      return items;
    }, 2, "immediate", { maxInFlight: 1 });
    const results = [1, 2, 3, 4, 5].map((n) => batcher.add(n).catch((e: Error) => e.message));
    expect(await Promise.all(results)).toEqual(["refused", "refused", 3, 4, 5]);
    expect(calls).toEqual([[1, 2], [3, 4], [5]]);
  });
});
