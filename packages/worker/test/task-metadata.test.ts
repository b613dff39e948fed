// metadata.* in a run on a real worker: changes apply to metadata.current() at once and are stored
// when the attempt ends (and before each wait); a replay after a wait applies nothing twice; a
// retry after a failure applies its operations again (as Trigger.dev's re-run does); operations
// inside a hook recorded once keep their numbers; parent/root change the parent's metadata;
// metadata over 256 KiB is not stored and the run's log says so.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { metadata, task, tasks, wait } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";
import { collectTaskLogs } from "./task-logs.ts";

let te: TestEngine;
let tw: TestWorker;
const logs = collectTaskLogs();

const counter = task({
  id: "meta-counter",
  onStart: async () => {
    metadata.append("events", "start");
  },
  run: async (payload: { tokens: string[] }) => {
    const seenAtStart = metadata.get("user");
    metadata.increment("count").append("events", "run");
    for (const token of payload.tokens) {
      metadata.increment("count", 10).set("status", `waiting for ${token}`);
      await wait.forToken(token);
    }
    metadata.decrement("count", 1).set("status", "done");
    return { seenAtStart, current: metadata.current() };
  },
});

let failures = 0;
const retried = task({
  id: "meta-retried",
  retry: { maxAttempts: 2, minTimeoutInMs: 10, maxTimeoutInMs: 10, factor: 1 },
  run: async () => {
    metadata.increment("tries");
    if (failures++ === 0) throw new Error("first attempt fails");
    return metadata.current();
  },
});

const child = task({
  id: "meta-child",
  run: async () => {
    metadata.parent.increment("childrenDone").append("children", "one");
    metadata.root.set("rootSeen", true);
    metadata.set("mine", 1);
    return "ok";
  },
});

const parent = task({
  id: "meta-parent",
  run: async () => {
    metadata.root.set("selfRoot", true); // a run without a parent is its own root
    const result = await tasks.triggerAndWait("meta-child", {});
    await metadata.refresh();
    return { ok: result.ok, current: metadata.current() };
  },
});

const huge = task({
  id: "meta-huge",
  run: async () => {
    metadata.set("big", "x".repeat(300 * 1024));
    await metadata.flush();
    return "done";
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [counter, retried, child, parent, huge], { taskLogs: logs });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

const complete = (tokenId: string) => withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, {}));
const newToken = async () => (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
const finished = (id: string) => tw.worker.events.next("runFinished", (e) => e.runId === id);
const outputOf = async (id: string) => JSON.parse((await getRunRow(te, id)).output!).json;

describe("metadata in a run", () => {
  it("reads the trigger's metadata, and stores what the code and its hooks changed when the run ends", async () => {
    const { id } = await triggerRun(te.engine, te.env, "meta-counter", { tokens: [] }, { metadata: { user: "ada" } });
    expect((await finished(id)).status).toBe("COMPLETED");
    const expected = { user: "ada", events: ["start", "run"], count: 0, status: "done" };
    expect(await outputOf(id)).toEqual({ seenAtStart: "ada", current: expected });
    expect((await getRunRow(te, id)).metadata).toEqual(expected);
  });

  it("stores the changes before a wait, and applies nothing twice when the run is replayed after two waits", async () => {
    const tokens = [await newToken(), await newToken()];
    const suspended = tw.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "meta-counter", { tokens });
    await suspended;
    // Stored before the run suspended: onStart's append, the run's increment, append and set.
    expect((await getRunRow(te, id)).metadata).toEqual({ events: ["start", "run"], count: 11, status: `waiting for ${tokens[0]}` });
    const suspendedAgain = tw.worker.events.next("runSuspended");
    await complete(tokens[0]!);
    await suspendedAgain;
    expect((await getRunRow(te, id)).metadata).toEqual({ events: ["start", "run"], count: 21, status: `waiting for ${tokens[1]}` });
    const done = finished(id);
    await complete(tokens[1]!);
    expect((await done).status).toBe("COMPLETED");
    const expected = { events: ["start", "run"], count: 20, status: "done" };
    expect((await getRunRow(te, id)).metadata).toEqual(expected);
    expect((await outputOf(id)).current).toEqual(expected);
  });

  it("applies a retried attempt's operations again, as Trigger.dev's re-run does", async () => {
    const { id } = await triggerRun(te.engine, te.env, "meta-retried", {});
    expect((await finished(id)).status).toBe("COMPLETED");
    expect(await outputOf(id)).toEqual({ tries: 2 });
    expect((await getRunRow(te, id)).metadata).toEqual({ tries: 2 });
  });

  it("changes the parent's and root's metadata from a child (a run without a parent is its own root)", async () => {
    const { id } = await triggerRun(te.engine, te.env, "meta-parent", {});
    expect((await finished(id)).status).toBe("COMPLETED");
    const expected = { selfRoot: true, childrenDone: 1, children: ["one"], rootSeen: true };
    expect(await outputOf(id)).toEqual({ ok: true, current: expected });
    expect((await getRunRow(te, id)).metadata).toEqual(expected);
    const { rows } = await te.db.pool.query(`SELECT metadata FROM runs WHERE parent_run_id = $1`, [id]);
    expect(rows).toEqual([{ metadata: { mine: 1 } }]);
  });

  it("does not store metadata over 256 KiB and says so in the run's log", async () => {
    const { id } = await triggerRun(te.engine, te.env, "meta-huge", {}, { metadata: { keep: true } });
    expect((await finished(id)).status).toBe("COMPLETED");
    expect((await getRunRow(te, id)).metadata).toEqual({ keep: true });
    expect(logs.of(id).map((r) => [r.level, r.message])).toEqual([["error", expect.stringMatching(/^metadata operations were not stored: .*over the limit of 262144 bytes/)]]);
  });

  it("does nothing outside a run", () => {
    expect(metadata.set("a", 1).increment("b")).toBeDefined();
    expect(metadata.current()).toBeUndefined();
    expect(metadata.get("a")).toBeUndefined();
  });
});
