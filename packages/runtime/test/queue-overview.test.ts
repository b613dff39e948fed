// queueOverview: an environment's queues with their runs by state, their registered limit and tasks,
// what an operator set on them (paused, a limit override),
// declared queues without runs included, another environment's runs and registrations left out.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { delayedRuns, FakeClock, fireAllDue, getEnvironment, queueOverview, triggerRun, type Environment } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";

const T0 = new Date("2031-05-06T07:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
const clock = new FakeClock(T0);
let te: TestEngine;
let prod: Environment;

beforeAll(async () => {
  te = await startTestEngine({ clock });
  prod = (await getEnvironment(te.db.pool, te.project.environments.prod.id))!;
});
afterAll(async () => te?.close());

async function register(environmentId: string, taskIdentifier: string, queueName: string, concurrencyLimit: number | null) {
  await te.db.pool.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, worker_version) VALUES ($1, $2, $3, $4, 'v1')`,
    [environmentId, taskIdentifier, queueName, concurrencyLimit],
  );
}

/** Puts a run where a worker would have left it (the test's shortcut through the state machine). */
async function setRun(id: string, set: Record<string, unknown>) {
  const columns = Object.keys(set);
  await te.db.pool.query(`UPDATE runs SET ${columns.map((c, i) => `${c} = $${i + 2}`).join(", ")} WHERE id = $1`, [id, ...Object.values(set)]);
}

async function trigger(env: Environment, taskIdentifier: string, options: { delay?: string } = {}): Promise<string> {
  return (await triggerRun(te.engine, env, taskIdentifier, {}, options)).id;
}

describe("queueOverview", () => {
  it("counts each queue's runs by state, with its strictest registered limit and its tasks", async () => {
    // Two tasks share the queue "mail" (the stricter limit holds); "idle" is declared with no runs;
    // "orphan" has runs but no worker registered it.
    await register(te.env.id, "email", "mail", 5);
    await register(te.env.id, "sms", "mail", 2);
    await register(te.env.id, "report", "task/report", null);
    await register(te.env.id, "idle", "idle", 3);
    await register(prod.id, "email", "mail", 1);

    clock.set(T0);
    const delayedThenQueued = await trigger(te.env, "report", { delay: "30s" });
    const stillDelayed = await trigger(te.env, "report", { delay: "10m" });
    const retried = await trigger(te.env, "email");
    clock.set(at(10_000));
    await trigger(te.env, "email");
    await trigger(te.env, "orphan");
    const backingOff = await trigger(te.env, "email");
    const dequeued = await trigger(te.env, "sms");
    const executing = await trigger(te.env, "sms");
    const waiting = await trigger(te.env, "sms");
    const completed = await trigger(te.env, "sms");
    const failed = await trigger(te.env, "email");
    for (const status of ["QUEUED", "EXECUTING", "WAITING", "COMPLETED"]) {
      const id = await trigger(prod, "email");
      if (status !== "QUEUED") await setRun(id, { status });
    }

    // The first email run failed at +20 s and is retried from +30 s; another waits out a backoff to +2 min.
    await setRun(retried, { updated_at: at(20_000), available_at: at(30_000), attempt_number: 1 });
    await setRun(backingOff, { updated_at: at(20_000), available_at: at(120_000), attempt_number: 1 });
    await setRun(dequeued, { status: "DEQUEUED" });
    await setRun(executing, { status: "EXECUTING", started_at: at(10_000) });
    await setRun(waiting, { status: "WAITING", started_at: at(10_000) });
    await setRun(completed, { status: "COMPLETED", finished_at: at(15_000) });
    await setRun(failed, { status: "FAILED", finished_at: at(15_000) });
    // The 30 s delay passes: the timer queues that run (its updated_at is when it became QUEUED).
    clock.set(at(40_000));
    await fireAllDue(te.engine, clock.now(), [delayedRuns]);

    clock.set(at(60_000));
    // An operator paused "idle" and overrode its limit (queue-controls.ts); "mail" in prod is paused.
    await te.db.pool.query(`INSERT INTO queues (environment_id, name, paused, concurrency_limit_override) VALUES ($1, 'idle', true, 1), ($2, 'mail', true, NULL)`, [te.env.id, prod.id]);
    expect(await queueOverview(te.db.pool, te.env.id, clock.now())).toEqual([
      { queue: "idle", queued: 0, oldestQueuedAt: null, running: 0, waiting: 0, delayed: 0, concurrencyLimit: 3, limitOverride: 1, paused: true, rateLimit: null, ownRates: null, tasks: ["idle"] },
      // Ready: the run triggered at +10 s and the retry (ready since +30 s); the one in its backoff is delayed.
      { queue: "mail", queued: 2, oldestQueuedAt: at(10_000), running: 2, waiting: 1, delayed: 1, concurrencyLimit: 2, limitOverride: null, paused: false, rateLimit: null, ownRates: null, tasks: ["email", "sms"] },
      { queue: "task/orphan", queued: 1, oldestQueuedAt: at(10_000), running: 0, waiting: 0, delayed: 0, concurrencyLimit: null, limitOverride: null, paused: false, rateLimit: null, ownRates: null, tasks: ["orphan"] },
      { queue: "task/report", queued: 1, oldestQueuedAt: at(40_000), running: 0, waiting: 0, delayed: 1, concurrencyLimit: null, limitOverride: null, paused: false, rateLimit: null, ownRates: null, tasks: ["report"] },
    ]);
    expect((await te.db.pool.query(`SELECT status FROM runs WHERE id = $1`, [stillDelayed])).rows[0].status).toBe("DELAYED");

    // Once the backoff is over, that run is ready too, ready since its available_at.
    clock.set(at(180_000));
    const [, mail] = await queueOverview(te.db.pool, te.env.id, clock.now());
    expect(mail).toMatchObject({ queue: "mail", queued: 3, oldestQueuedAt: at(10_000), delayed: 0 });

    // The other environment sees its own runs and its own limit only.
    expect(await queueOverview(te.db.pool, prod.id, clock.now())).toEqual([
      { queue: "mail", queued: 1, oldestQueuedAt: at(10_000), running: 1, waiting: 1, delayed: 0, concurrencyLimit: 1, limitOverride: null, paused: true, rateLimit: null, ownRates: null, tasks: ["email"] },
    ]);
  });

  it("is empty for an environment with neither runs nor registered tasks", async () => {
    expect(await queueOverview(te.db.pool, te.project.environments.staging.id, clock.now())).toEqual([]);
  });
});
