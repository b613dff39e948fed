// Resumes no worker took through the NOTIFY fast path are handed to pg-boss by the timer loops:
// each exactly once, however many loops fire at the same time (time is an injected clock).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, dueResumes, RESUME_GRACE_SECONDS } from "@svc/runtime/engine";
import { resumeQueueName } from "@svc/queue";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { waitingRunOn } from "./waitpoints-helpers.ts";

const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ clock });
});
afterAll(async () => api?.close());

describe("handing due resumes to pg-boss", () => {
  it("makes one resume job per run when two timer loops fire at once, and clears every mark", async () => {
    const envId = api.project.environments.dev.id;
    const runIds: string[] = [];
    for (let i = 0; i < 60; i++) {
      const { waitpoint } = await createToken(api.engine, envId, { timeout: "1h" });
      runIds.push(await waitingRunOn(api.db.pool, envId, waitpoint.id));
      await completeToken(api.engine, api.db.pool, waitpoint.id, { i });
    }
    // Not due before the grace period: the fast path may still take them.
    expect(await dueResumes.fire(api.engine, clock.now(), 500)).toBe(0);
    clock.advance(RESUME_GRACE_SECONDS * 1000);
    const handled = await Promise.all([dueResumes.fire(api.engine, clock.now(), 7), dueResumes.fire(api.engine, clock.now(), 7)]);
    let total = handled[0]! + handled[1]!;
    for (let n = -1; n !== 0; total += n) n = await dueResumes.fire(api.engine, clock.now(), 500);
    expect(total).toBe(60);
    const { rows: jobs } = await api.db.pool.query<{ run_id: string }>(
      `SELECT data->>'runId' AS run_id FROM pgboss.job WHERE name = $1 AND data->>'kind' = 'resume'`,
      [resumeQueueName(envId)],
    );
    expect(jobs.map((j) => j.run_id).sort()).toEqual([...runIds].sort());
    const { rows } = await api.db.pool.query(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND resume_due_at IS NOT NULL`, [runIds]);
    expect(rows[0].n).toBe(0);
    expect(await dueResumes.nextDue(api.db.pool)).toBeNull();
  });
});
