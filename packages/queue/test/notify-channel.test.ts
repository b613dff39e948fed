// Contract with pg-boss: svc computes the channel pg-boss NOTIFYs on (BOSS_NOTIFY_CHANNEL) instead
// of importing pg-boss internals, so this pins it against a real pg-boss instance. If an upgrade
// changes how pg-boss names the channel, workers would silently fall back to polling; this fails.
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "@svc/runtime/db";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { BOSS_NOTIFY_CHANNEL, startQueueName, type PgBoss } from "../src/index.ts";
import { pgBossDispatcher, type PgBossTestDispatcher } from "../src/testing.ts";

/** Notified after the job's transaction commits: Postgres delivers notifications in commit order. */
const SENTINEL = "svc_test_sentinel";

let te: TestEngine<PgBossTestDispatcher>;
let boss: PgBoss;
let listener: pg.PoolClient;
const heard: { channel: string; payload: string | undefined }[] = [];
let sentinelHeard: () => void = () => {};

beforeAll(async () => {
  te = await startTestEngine({ dispatcher: pgBossDispatcher({ max: 2 }) });
  boss = te.queue.boss;
  listener = await te.db.pool.connect();
  listener.on("notification", (n) => {
    if (n.channel === SENTINEL) return sentinelHeard();
    heard.push({ channel: n.channel, payload: n.payload });
  });
  await listener.query(`LISTEN "${BOSS_NOTIFY_CHANNEL}"`);
  await listener.query(`LISTEN ${SENTINEL}`);
});
afterAll(async () => {
  listener?.release();
  await te?.close();
});

/** Runs `send`, then a sentinel NOTIFY, and returns what was heard on the other channels in between. */
async function heardDuring(send: () => Promise<unknown>): Promise<typeof heard> {
  heard.length = 0;
  const sentinel = new Promise<void>((resolve) => (sentinelHeard = resolve));
  await send();
  await te.db.pool.query(`NOTIFY ${SENTINEL}`);
  await sentinel;
  return [...heard];
}

describe("the pg-boss notify channel", () => {
  it("carries the queue name, once, when svc's dispatcher inserts a job that no registered worker consumes", async () => {
    const dispatcher = te.queue.dispatcher;
    const job = { kind: "start" as const, runId: "run_contract", environmentId: "env_contract", queueName: "task/contract" };
    const name = startQueueName(job.environmentId, job.queueName);
    await dispatcher.ensureQueue(name);
    // svc's own NOTIFY on pg-boss's channel (wakeWorkers' fallback); pg-boss's is off for svc's queues.
    const heard = await heardDuring(() => withTransaction(te.db.pool, (tx) => dispatcher.dispatch(tx, [job], new Date())));
    expect(heard).toEqual([{ channel: BOSS_NOTIFY_CHANNEL, payload: name }]);
  });

  it("carries the queue name when pg-boss's own send puts a job on a notify queue", async () => {
    await boss.createQueue("contract-send", { notify: true });
    const heard = await heardDuring(() => boss.send("contract-send", {}));
    expect(heard).toEqual([{ channel: BOSS_NOTIFY_CHANNEL, payload: "contract-send" }]);
  });
});
