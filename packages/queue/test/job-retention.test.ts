// pg-boss's own retention, as svc sets it: ended jobs go an hour after they ended, queued jobs are
// never dropped by pg-boss (a queued run would be left without its job), queues made before keep
// none of pg-boss's defaults, nor pg-boss's NOTIFY to every worker (svc wakes one: wake-workers.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { ENDED_JOB_SECONDS, PgBossDispatcher, QUEUED_JOB_SECONDS, startQueueName } from "../src/index.ts";
import { pgBossDispatcher, type PgBossTestDispatcher } from "../src/testing.ts";

let te: TestEngine<PgBossTestDispatcher>;
beforeAll(async () => {
  te = await startTestEngine({ dispatcher: pgBossDispatcher({ max: 2 }) });
});
afterAll(async () => te?.close());

describe("pg-boss job retention", () => {
  it("gives svc's queues an hour for ended jobs, no deadline for queued ones and no pg-boss NOTIFY, also to queues made before", async () => {
    const boss = te.queue.boss;
    const fresh = startQueueName(te.env.id, "task/fresh");
    await te.queue.dispatcher.ensureQueue(fresh);
    expect(await boss.getQueue(fresh)).toMatchObject({ deleteAfterSeconds: ENDED_JOB_SECONDS, retentionSeconds: QUEUED_JOB_SECONDS, notify: false });
    expect(QUEUED_JOB_SECONDS).toBeGreaterThanOrEqual(10 * 365 * 86_400);

    const older = startQueueName(te.env.id, "task/older");
    await boss.createQueue(older, { notify: true }); // pg-boss's defaults: 7 days, 14 days
    expect(await boss.getQueue(older)).toMatchObject({ deleteAfterSeconds: 7 * 86_400, retentionSeconds: 14 * 86_400 });
    await new PgBossDispatcher(boss).ensureQueue(older);
    expect(await boss.getQueue(older)).toMatchObject({ deleteAfterSeconds: ENDED_JOB_SECONDS, retentionSeconds: QUEUED_JOB_SECONDS, notify: false });
  });
});
