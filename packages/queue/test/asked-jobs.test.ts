// A wake-up asks a consumer for a number of jobs, and its fetch asks for that many: two workers
// woken for one job each take one each, where the first one's fetch used to take both and leave
// the second an empty fetch. A count the slots cannot take stays pending for the next fetch.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { JobConsumer, startQueueName, type ConsumedJob, type ConsumerOptions } from "../src/index.ts";
import { pgBossDispatcher, type PgBossTestDispatcher } from "../src/testing.ts";

let te: TestEngine<PgBossTestDispatcher>;
/** The jobs each fetch found, in call order. */
const fetches: number[] = [];

beforeAll(async () => {
  te = await startTestEngine({ dispatcher: pgBossDispatcher({ max: 4 }) });
  const fetch = te.queue.boss.fetch.bind(te.queue.boss);
  te.queue.boss.fetch = (async (...args: Parameters<typeof fetch>) => {
    const jobs = await fetch(...args);
    fetches.push(jobs.length);
    return jobs;
  }) as typeof te.queue.boss.fetch;
});
afterAll(async () => te?.close());

const insertJobs = (queue: string, n: number) =>
  te.db.pool.query(`INSERT INTO pgboss.job_common (id, name, data) SELECT gen_random_uuid(), $1, '{"runId":"r"}' FROM generate_series(1, $2::int)`, [queue, n]);

/** A consumer (polling only once a minute) whose handler holds each job until the test lets it go. */
function holdingConsumer(options: Partial<ConsumerOptions> = {}) {
  const held: { job: ConsumedJob; done: () => void }[] = [];
  const consumer = new JobConsumer(te.queue.boss, {
    concurrency: 10,
    pollIntervalMs: 60_000,
    heartbeatIntervalMs: 60_000,
    handle: (job, release) => new Promise<void>((resolve) => held.push({ job, done: () => (release(), resolve()) })),
    onError: (error) => {
      throw error;
    },
    ...options,
  });
  return { consumer, held };
}

async function stop(...consumers: { consumer: JobConsumer; held: { done: () => void }[] }[]) {
  for (const c of consumers) for (const h of c.held) h.done();
  await Promise.all(consumers.map((c) => c.consumer.drain()));
}

describe("the jobs a wake-up asks for", () => {
  it("two consumers woken for one job each take one each, and neither fetch comes back empty", async () => {
    const queue = startQueueName(te.env.id, "task/shared");
    await te.queue.dispatcher.ensureQueue(queue);
    const a = holdingConsumer();
    const b = holdingConsumer();
    fetches.length = 0;
    for (const c of [a, b]) {
      c.consumer.start();
      // Subscribed the way a worker is, without the fetch a subscription asks for at once.
      c.consumer.subscribe({ name: queue });
    }
    await expect.poll(() => fetches.length).toBeGreaterThanOrEqual(2);
    fetches.length = 0;
    try {
      await insertJobs(queue, 2);
      a.consumer.notify(queue, 1);
      await expect.poll(() => a.held.length).toBe(1);
      b.consumer.notify(queue, 1);
      await expect.poll(() => b.held.length).toBe(1);
      expect(fetches).toEqual([1, 1]);
    } finally {
      await stop(a, b);
    }
  });

  it("asks for no more than the free slots, and fetches the rest once slots are freed", async () => {
    const queue = startQueueName(te.env.id, "task/more-than-slots");
    await te.queue.dispatcher.ensureQueue(queue);
    const c = holdingConsumer({ concurrency: 2 });
    fetches.length = 0;
    c.consumer.start();
    c.consumer.subscribe({ name: queue });
    await expect.poll(() => fetches.length).toBeGreaterThanOrEqual(1);
    fetches.length = 0;
    try {
      await insertJobs(queue, 5);
      c.consumer.notify(queue, 5);
      await expect.poll(() => c.held.length).toBe(2);
      for (const h of c.held.slice(0, 2)) h.done();
      await expect.poll(() => c.held.length).toBe(4);
      for (const h of c.held.slice(2, 4)) h.done();
      await expect.poll(() => c.held.length).toBe(5);
      expect(fetches).toEqual([2, 2, 1]);
    } finally {
      await stop(c);
    }
  });

  it("a wake-up that names no count (a poll, pg-boss's channel) fetches as many as the slots take", async () => {
    const queue = startQueueName(te.env.id, "task/uncounted");
    await te.queue.dispatcher.ensureQueue(queue);
    const c = holdingConsumer({ concurrency: 3 });
    fetches.length = 0;
    c.consumer.start();
    c.consumer.subscribe({ name: queue });
    await expect.poll(() => fetches.length).toBeGreaterThanOrEqual(1);
    fetches.length = 0;
    try {
      await insertJobs(queue, 4);
      c.consumer.notify(queue);
      await expect.poll(() => c.held.length).toBe(3);
      expect(fetches).toEqual([3]);
    } finally {
      await stop(c);
    }
  });
});
