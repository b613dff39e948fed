// listLiveWorkers: the registry rows of one environment still live at `now`, oldest start first; a
// row written before migration 0024 (no slots, start or heartbeat) is listed with nulls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listLiveWorkers } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";

const T0 = new Date("2031-05-06T07:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
let te: TestEngine;

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => te?.close());

describe("listLiveWorkers", () => {
  it("lists the environment's workers whose alive_until is ahead of now, by start", async () => {
    const dev = te.env.id;
    const prod = te.project.environments.prod.id;
    const rows = [
      // id, environment, slots, in use, started, heartbeat, alive until
      ["worker_late", dev, 4, 1, at(-60_000), at(-2_000), at(13_000)],
      ["worker_early", dev, 8, 8, at(-3_600_000), at(-1_000), at(14_000)],
      ["worker_gone", dev, 8, 0, at(-7_200_000), at(-20_000), at(-5_000)],
      ["worker_prod", prod, 8, 2, at(-60_000), at(-1_000), at(14_000)],
    ] as const;
    for (const [id, environmentId, slots, inUse, startedAt, heartbeatAt, aliveUntil] of rows) {
      await te.db.pool.query(
        `INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until, slots, slots_in_use, started_at, heartbeat_at)
         VALUES ($1, $2, '{a,b}', 'v2', 1, $3, $4, $5, $6, $7)`,
        [id, environmentId, aliveUntil, slots, inUse, startedAt, heartbeatAt],
      );
    }
    // As a worker started before migration 0024 writes it.
    await te.db.pool.query(
      `INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until) VALUES ('worker_old', $1, '{a}', 'v1', 2, $2)`,
      [dev, at(1_000)],
    );

    expect(await listLiveWorkers(te.db.pool, dev, T0)).toEqual([
      { id: "worker_old", tasks: ["a"], version: "v1", slots: null, slotsInUse: 0, startedAt: null, lastHeartbeatAt: null, aliveUntil: at(1_000) },
      { id: "worker_early", tasks: ["a", "b"], version: "v2", slots: 8, slotsInUse: 8, startedAt: at(-3_600_000), lastHeartbeatAt: at(-1_000), aliveUntil: at(14_000) },
      { id: "worker_late", tasks: ["a", "b"], version: "v2", slots: 4, slotsInUse: 1, startedAt: at(-60_000), lastHeartbeatAt: at(-2_000), aliveUntil: at(13_000) },
    ]);
    expect((await listLiveWorkers(te.db.pool, dev, at(13_500))).map((w) => w.id)).toEqual(["worker_early"]);
    expect((await listLiveWorkers(te.db.pool, prod, T0)).map((w) => w.id)).toEqual(["worker_prod"]);
  });
});
