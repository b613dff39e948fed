// Handled jobs are deleted together: those of a queue without a concurrency limit ride on the
// queue's next fetch, or wait deleteDelayMs for company (one DELETE for several fetches); those of
// a limited queue go at once (their deletion frees the group's next job), and a drain deletes
// whatever still waits.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { JobConsumer, startQueueName, type ConsumedJob, type ConsumerOptions } from "../src/index.ts";
import { pgBossDispatcher, type PgBossTestDispatcher } from "../src/testing.ts";

let te: TestEngine<PgBossTestDispatcher>;
/** Jobs per pg-boss deleteJob call, in call order. */
const deletes: number[] = [];

const insertJob = (queue: string) => te.db.pool.query(`INSERT INTO pgboss.job_common (id, name, data) VALUES (gen_random_uuid(), $1, '{"runId":"r"}')`, [queue]);

beforeAll(async () => {
  te = await startTestEngine({ dispatcher: pgBossDispatcher({ max: 4 }) });
  const deleteJob = te.queue.boss.deleteJob.bind(te.queue.boss);
  te.queue.boss.deleteJob = ((name: string, ids: unknown) => {
    deletes.push(Array.isArray(ids) ? ids.length : 1);
    return deleteJob(name, ids as string[]);
  }) as typeof te.queue.boss.deleteJob;
});
afterAll(async () => te?.close());

const jobsIn = async (queue: string) =>
  (await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pgboss.job_common WHERE name = $1`, [queue])).rows[0]!.n;

/** A consumer whose handler holds each job until the test lets it go. */
function holdingConsumer(options: Partial<ConsumerOptions>) {
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

/** One job per fetch: inserted, announced, and taken before the next. */
async function oneFetchEach(consumer: JobConsumer, held: unknown[], queue: string, n: number) {
  const before = held.length;
  for (let i = 0; i < n; i++) {
    await insertJob(queue);
    consumer.notify(queue);
    await expect.poll(() => held.length).toBe(before + i + 1);
  }
}

/** A started holding consumer of a fresh queue whose handled jobs wait (for a fetch) as long as a test takes. */
async function waitingConsumer(name: string) {
  const queue = startQueueName(te.env.id, name);
  await te.queue.dispatcher.ensureQueue(queue);
  const { consumer, held } = holdingConsumer({ deleteDelayMs: 600_000 });
  consumer.subscribe({ name: queue });
  consumer.start();
  return { queue, consumer, held };
}

describe("deleting handled jobs", () => {
  it("waits deleteDelayMs for company in a queue without a limit: jobs of three fetches, one DELETE at the drain", async () => {
    const queue = startQueueName(te.env.id, "task/unlimited");
    await te.queue.dispatcher.ensureQueue(queue);
    const { consumer, held } = holdingConsumer({ deleteDelayMs: 600_000 });
    consumer.subscribe({ name: queue });
    consumer.start();
    deletes.length = 0;
    await oneFetchEach(consumer, held, queue, 3);
    // Handled in three separate turns, each with a round trip between: still none deleted.
    for (const h of held) {
      h.done();
      await te.db.pool.query("SELECT 1");
    }
    expect(deletes).toEqual([]);
    expect(await jobsIn(queue)).toBe(3);
    await consumer.drain();
    expect(deletes).toEqual([3]);
    expect(await jobsIn(queue)).toBe(0);
  });

  it("deletes after the default delay without a drain", async () => {
    const queue = startQueueName(te.env.id, "task/default-delay");
    await te.queue.dispatcher.ensureQueue(queue);
    const { consumer, held } = holdingConsumer({});
    consumer.subscribe({ name: queue });
    consumer.start();
    try {
      await oneFetchEach(consumer, held, queue, 2);
      for (const h of held) h.done();
      await expect.poll(() => jobsIn(queue)).toBe(0);
    } finally {
      await consumer.drain();
    }
  });

  it("deletes a limited queue's jobs at once, whatever the delay: their group's next job waits on it", async () => {
    const queue = startQueueName(te.env.id, "task/limited");
    await te.queue.dispatcher.ensureQueue(queue);
    const { consumer, held } = holdingConsumer({ deleteDelayMs: 600_000 });
    consumer.subscribe({ name: queue, concurrencyLimit: 5 });
    consumer.start();
    try {
      await oneFetchEach(consumer, held, queue, 1);
      held[0]!.done();
      await expect.poll(() => jobsIn(queue)).toBe(0);
    } finally {
      await consumer.drain();
    }
  });

  it("deletes a queue's handled jobs with its next fetch: no DELETE of their own", async () => {
    const { queue, consumer, held } = await waitingConsumer("task/riding");
    try {
      await oneFetchEach(consumer, held, queue, 2);
      held[0]!.done();
      held[1]!.done();
      await te.db.pool.query("SELECT 1");
      expect(await jobsIn(queue)).toBe(2);
      deletes.length = 0;
      // The next job's fetch takes the two handled ones with it.
      await oneFetchEach(consumer, held, queue, 1);
      expect(await jobsIn(queue)).toBe(1);
      expect(deletes).toEqual([]);
    } finally {
      for (const h of held) h.done();
      await consumer.drain();
    }
    expect(await jobsIn(queue)).toBe(0);
  });

  it("leaves a handled job that was delivered again meanwhile (the attempt it held is no longer the job's)", async () => {
    const { queue, consumer, held } = await waitingConsumer("task/redelivered");
    try {
      await oneFetchEach(consumer, held, queue, 2);
      const [first, second] = held.map((h) => h.job);
      // The first one's heartbeat lapsed and another worker fetched it again: a later attempt.
      await te.db.pool.query(`UPDATE pgboss.job_common SET retry_count = retry_count + 1 WHERE id = $1`, [first!.id]);
      held[0]!.done();
      held[1]!.done();
      await te.db.pool.query("SELECT 1");
      await oneFetchEach(consumer, held, queue, 1);
      // The next fetch deleted the second; the first belongs to its later attempt now.
      const { rows } = await te.db.pool.query<{ id: string }>(`SELECT id FROM pgboss.job_common WHERE name = $1`, [queue]);
      expect(rows.map((r) => r.id).sort()).toEqual([first!.id, held[2]!.job.id].sort());
      expect(rows.map((r) => r.id)).not.toContain(second!.id);
    } finally {
      for (const h of held) h.done();
      await consumer.drain();
    }
  });
});
