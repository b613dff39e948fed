// svc dev's notices of queued runs no worker serves (unserved-notices.ts), against a real database:
// once per task while it stays unserved, said again once served and unserved anew, and worded for a
// task never registered (not exported?) or registered by a worker that is gone.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, triggerRun } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { UnservedNotices } from "../src/dev/unserved-notices.ts";

const clock = new FakeClock(new Date("2031-01-01T00:00:00.000Z"));
let te: TestEngine;
const lines: string[] = [];
let notices: UnservedNotices;

beforeAll(async () => {
  te = await startTestEngine({ clock });
  notices = new UnservedNotices({ db: te.db.pool, environmentId: te.env.id, clock, print: (line) => lines.push(line) });
});
afterAll(async () => te?.close());

const liveWorker = (tasks: string[]) =>
  te.db.pool.query(`INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until) VALUES ('worker_notices', $1, $2, 'v1', 0, $3)`,
    [te.env.id, tasks, new Date(clock.now().getTime() + 60_000)]);

describe("svc dev's unserved notices", () => {
  it("names the oldest run once per task, again after the task was served for a while, and says whether it was ever registered", async () => {
    const first = await triggerRun(te.engine, te.env, "not-exported", {});
    clock.advance(1000);
    await triggerRun(te.engine, te.env, "not-exported", {});
    await notices.check();
    expect(lines).toEqual([`${first.id} (not-exported) is queued (and 1 more) but no worker serves not-exported: is it exported from your tasks file?`]);
    await notices.check();
    expect(lines).toHaveLength(1);

    // Served (a live worker has it): forgotten; unserved again (the worker is gone): said again.
    await liveWorker(["not-exported"]);
    await notices.check();
    expect(lines).toHaveLength(1);
    await te.db.pool.query(`DELETE FROM workers WHERE id = 'worker_notices'`);
    await notices.check();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(new RegExp(`^${first.id} \\(not-exported\\) is queued \\(and 1 more\\) but no worker serves not-exported: is it exported`));

    // Registered by a worker that has stopped: said so.
    await te.db.pool.query(`INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version) VALUES ($1, 'was-served', 'task/was-served', 'v1')`, [te.env.id]);
    const orphan = await triggerRun(te.engine, te.env, "was-served", {});
    await notices.check();
    expect(lines[2]).toBe(`${orphan.id} (was-served) is queued but no worker serves was-served: the worker that had it is gone (was the task removed, or did the tasks fail to load?)`);
    expect(lines).toHaveLength(3);
  });
});
