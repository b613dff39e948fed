import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configure, runs, tasks } from "@trigger.dev/sdk";
import { withTransaction } from "@svc/runtime/engine";
import { fireDelayed } from "../../runtime/src/engine/runs/transitions/fire-delayed.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";

// Debounced triggers (options.debounce) with the published SDK, unchanged, against svc on a real
// port. The server's clock is a FakeClock: the test moves time instead of sleeping.
const NOW = new Date("2026-04-01T09:00:00.000Z");
const SECOND = 1000;

let api: TestApi;
let clock: FakeClock;
beforeAll(async () => {
  clock = new FakeClock(NOW);
  api = await startTestApi({ clock });
  const baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
});
afterAll(async () => api?.close());

async function row(id: string) {
  const { rows } = await api.db.pool.query<{ status: string; delay_until: Date; debounce_key: string | null; tags: string[]; max_attempts: number | null }>(
    `SELECT status, delay_until, debounce_key, tags, max_attempts FROM runs WHERE id = $1`,
    [id],
  );
  return rows[0]!;
}

async function runsWithKey(task: string): Promise<string[]> {
  const { rows } = await api.db.pool.query<{ id: string }>(`SELECT id FROM runs WHERE task_identifier = $1 ORDER BY created_at, id`, [task]);
  return rows.map((r) => r.id);
}

describe("debounced triggers with @trigger.dev/sdk 4.8.3", () => {
  it("leading mode: later triggers push the pending run back and return it, keeping the first payload", async () => {
    const first = await tasks.trigger("deb-leading", { n: 1 }, { debounce: { key: "user-1", delay: "10s" } });
    expect((await row(first.id)).delay_until).toEqual(new Date(NOW.getTime() + 10 * SECOND));
    expect((await row(first.id)).status).toBe("DELAYED");

    clock.advance(3 * SECOND);
    const second = await tasks.trigger("deb-leading", { n: 2 }, { debounce: { key: "user-1", delay: "10s" } });
    expect(second.id).toBe(first.id);
    expect((await row(first.id)).delay_until).toEqual(new Date(clock.now().getTime() + 10 * SECOND));

    // A shorter delay never pulls the run earlier.
    const third = await tasks.trigger("deb-leading", { n: 3 }, { debounce: { key: "user-1", delay: "1s" } });
    expect(third.id).toBe(first.id);
    expect((await row(first.id)).delay_until).toEqual(new Date(clock.now().getTime() + 10 * SECOND));

    const run = await runs.retrieve(first.id);
    expect(run.status).toBe("DELAYED");
    expect(run.payload).toEqual({ n: 1 });
    // Another key, or the same key on another task, is another run.
    const other = await tasks.trigger("deb-leading", { n: 4 }, { debounce: { key: "user-2", delay: "10s" } });
    const otherTask = await tasks.trigger("deb-leading-2", { n: 5 }, { debounce: { key: "user-1", delay: "10s" } });
    expect(new Set([first.id, other.id, otherTask.id]).size).toBe(3);
  });

  it("trailing mode: each trigger replaces the payload, metadata, tags and maxAttempts", async () => {
    const first = await tasks.trigger("deb-trailing", { v: "a" }, { debounce: { key: "doc", delay: "5s", mode: "trailing" }, tags: ["old"], metadata: { step: 1 } });
    const second = await tasks.trigger("deb-trailing", { v: "b" }, { debounce: { key: "doc", delay: "5s", mode: "trailing" }, tags: ["new"], metadata: { step: 2 }, maxAttempts: 7 });
    expect(second.id).toBe(first.id);
    const run = await runs.retrieve(first.id);
    expect(run.payload).toEqual({ v: "b" });
    expect(run.metadata).toEqual({ step: 2 });
    expect(run.tags).toEqual(["new"]);
    expect((await row(first.id)).max_attempts).toBe(7);
    // The run list's tag index follows the replaced tags.
    const byTag = [];
    for await (const r of runs.list({ tag: "new", taskIdentifier: "deb-trailing" })) byTag.push(r.id);
    expect(byTag).toEqual([first.id]);
    for await (const r of runs.list({ tag: "old", taskIdentifier: "deb-trailing" })) throw new Error(`old tag still lists ${r.id}`);
  });

  it("once the run has started, the next trigger creates a new debounced run", async () => {
    const first = await tasks.trigger("deb-started", { i: 1 }, { debounce: { key: "k", delay: "2s" } });
    const due = clock.advance(2 * SECOND);
    const fired = await withTransaction(api.db.pool, (tx) => fireDelayed(tx, due, 100));
    expect(fired.map((r) => r.id)).toContain(first.id);
    expect((await row(first.id)).status).not.toBe("DELAYED");

    const next = await tasks.trigger("deb-started", { i: 2 }, { debounce: { key: "k", delay: "2s" } });
    expect(next.id).not.toBe(first.id);
    expect((await row(next.id)).status).toBe("DELAYED");
    expect(await runsWithKey("deb-started")).toEqual([first.id, next.id]);
  });

  it("maxDelay: a push past maxDelay from the first trigger leaves the run as it is and starts a new one", async () => {
    const start = clock.now().getTime();
    const options = { debounce: { key: "burst", delay: "10s", maxDelay: "15s" } };
    const first = await tasks.trigger("deb-max", { i: 1 }, options);
    clock.advance(4 * SECOND);
    expect((await tasks.trigger("deb-max", { i: 2 }, options)).id).toBe(first.id);
    expect((await row(first.id)).delay_until).toEqual(new Date(start + 14 * SECOND));

    clock.advance(2 * SECOND); // now + 10s = start + 16s, past start + 15s
    const second = await tasks.trigger("deb-max", { i: 3 }, options);
    expect(second.id).not.toBe(first.id);
    const old = await row(first.id);
    expect(old).toMatchObject({ status: "DELAYED", debounce_key: null });
    expect(old.delay_until).toEqual(new Date(start + 14 * SECOND));
    // The new run now holds the key.
    expect((await tasks.trigger("deb-max", { i: 4 }, options)).id).toBe(second.id);
  });

  it("concurrent triggers with one key create one run", async () => {
    const handles = await Promise.all(Array.from({ length: 16 }, (_, i) => tasks.trigger("deb-race", { i }, { debounce: { key: "same", delay: "30s", mode: "trailing" } })));
    expect(new Set(handles.map((h) => h.id)).size).toBe(1);
    expect(await runsWithKey("deb-race")).toEqual([handles[0]!.id]);
  });

  it("batch items with the same key share one run", async () => {
    const result = await tasks.batchTrigger("deb-batch", [
      { payload: { i: 0 }, options: { debounce: { key: "b", delay: "5s" } } },
      { payload: { i: 1 }, options: { debounce: { key: "b", delay: "5s" } } },
      { payload: { i: 2 } },
    ]);
    expect(result.runCount).toBe(3);
    const ids = await runsWithKey("deb-batch");
    expect(ids).toHaveLength(2);
    const debounced = await api.db.pool.query(`SELECT id FROM runs WHERE task_identifier = 'deb-batch' AND debounce_key = 'b' AND status = 'DELAYED'`);
    expect(debounced.rows).toHaveLength(1);
  });

  it("refuses bad debounce options with a 400", async () => {
    const bad: unknown[] = [
      { delay: "5s" },
      { key: "", delay: "5s" },
      { key: "k" },
      { key: "k", delay: "-5s" },
      { key: "k", delay: "500ms" },
      { key: "k", delay: "soon" },
      { key: "k", delay: 5 },
      { key: "k", delay: "5s", mode: "both" },
      { key: "k", delay: "5s", maxDelay: "never" },
      { key: "x".repeat(513), delay: "5s" },
      "k",
    ];
    for (const debounce of bad) {
      const res = await api.app.inject({ method: "POST", url: "/api/v1/tasks/deb-bad/trigger", headers: api.devAuth, payload: { payload: {}, options: { debounce } } });
      expect(res.statusCode, `${JSON.stringify(debounce)}: ${res.body}`).toBe(400);
      expect(res.json().error).toEqual(expect.any(String));
    }
    expect(await runsWithKey("deb-bad")).toEqual([]);
  });
});
