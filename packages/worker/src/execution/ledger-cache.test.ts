import { describe, expect, it } from "vitest";
import type { LedgerEntry } from "@svc/runtime/engine";
import { LedgerCache } from "./ledger-cache.ts";

const entry = (stepKey: string, value = ""): LedgerEntry => ({
  stepKey, epoch: 0, kind: "step", target: "s", waitpointId: null, resolved: true, outcome: { ok: true, value }, expiresAt: null,
});
const ledger = (version: number, ...entries: LedgerEntry[]) => ({ version, epoch: 0, entries });

describe("LedgerCache", () => {
  it("gives a run's ledger back once, and only at the version and epoch asked for", () => {
    const cache = new LedgerCache();
    cache.put("run_a", ledger(3, entry("#0")));
    expect(cache.take("run_a", 3, 0)).toEqual([entry("#0")]);
    // Taken out: the execution that resumed owns it now.
    expect(cache.take("run_a", 3, 0)).toBeNull();
    cache.put("run_a", ledger(3, entry("#0")));
    // Behind (or ahead): dropped, not kept for later.
    expect(cache.take("run_a", 4, 0)).toBeNull();
    expect(cache.size).toBe(0);
    cache.put("run_a", ledger(3, entry("#0")));
    expect(cache.take("run_a", 3, 1)).toBeNull();
    expect(cache.take("run_b", 3, 0)).toBeNull();
  });

  it("keeps the latest ledger of a run", () => {
    const cache = new LedgerCache();
    cache.put("run_a", ledger(1, entry("#0")));
    cache.put("run_a", ledger(3, entry("#0"), entry("#1")));
    expect(cache.size).toBe(1);
    expect(cache.take("run_a", 1, 0)).toBeNull();
    cache.put("run_a", ledger(3, entry("#0"), entry("#1")));
    expect(cache.take("run_a", 3, 0)).toHaveLength(2);
    expect(cache.bytes).toBe(0);
  });

  it("drops the least recently suspended runs past its bounds, by runs and by bytes", () => {
    const byRuns = new LedgerCache({ maxRuns: 2, maxBytes: 1_000_000 });
    for (const id of ["run_1", "run_2", "run_3"]) byRuns.put(id, ledger(1, entry("#0")));
    expect(byRuns.size).toBe(2);
    expect(byRuns.take("run_1", 1, 0)).toBeNull();
    expect(byRuns.take("run_3", 1, 0)).not.toBeNull();

    const byBytes = new LedgerCache({ maxRuns: 100, maxBytes: 2_500 });
    byBytes.put("run_1", ledger(1, entry("#0", "x".repeat(1_000))));
    byBytes.put("run_2", ledger(1, entry("#0", "x".repeat(1_000))));
    expect(byBytes.size).toBe(2);
    byBytes.put("run_3", ledger(1, entry("#0", "x".repeat(1_000))));
    expect(byBytes.size).toBe(2);
    expect(byBytes.bytes).toBeLessThanOrEqual(2_500);
    expect(byBytes.take("run_1", 1, 0)).toBeNull();
    // A ledger larger than the whole cache is not kept (and takes nothing else out).
    byBytes.put("run_4", ledger(1, entry("#0", "x".repeat(5_000))));
    expect(byBytes.size).toBe(2);
    expect(byBytes.take("run_4", 1, 0)).toBeNull();
    // Kept nothing at all.
    const off = new LedgerCache({ maxRuns: 0, maxBytes: 0 });
    off.put("run_1", ledger(1));
    expect(off.size).toBe(0);
  });
});
