// The lapse updates act on the runs findLapsed selected. The timer holds those rows locked in one
// transaction; each update is also guarded on what it expects (EXECUTING, the lease lapsed), so a
// run that moved on between the select and the update is
// left as it is. Driven here without the lock: select, then another connection's transition,
// then the update, in that order (each awaited).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, transitionRun, triggerRun, type RunRow } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { crashLapsed, findLapsed, requeueLapsed } from "../src/engine/runs/transitions/lapse.ts";

const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
const LEASE_MS = 15_000;
let te: TestEngine;

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

/** A run executing with a lease, offered (by a trigger or a completion) or claimed. */
async function fastPathExecution(task: string, options: { offered: boolean }): Promise<string> {
  const { id } = await triggerRun(te.engine, te.env, task, {});
  await te.db.pool.query(
    `UPDATE runs SET status = 'EXECUTING', claim_token = $2, attempt_number = 1, worker_id = 'worker_gone',
            lease_expires_at = $3, offered_at = $4 WHERE id = $1`,
    [id, `claim_${task}`, new Date(clock.now().getTime() + LEASE_MS), options.offered ? clock.now() : null],
  );
  return id;
}

async function row(id: string): Promise<RunRow> {
  const { rows } = await te.db.pool.query<RunRow>(`SELECT * FROM runs WHERE id = $1`, [id]);
  return rows[0]!;
}

/** The lapsed runs as the timer would see them at `now` (the statement's row locks end with it). */
async function lapsedNow(now: Date): Promise<string[]> {
  return (await findLapsed(te.db.pool, now, 100)).map((r) => r.id).sort();
}

describe("the lapse updates", () => {
  it("leave alone a run whose status changed after the select, and still act on the others", async () => {
    const canceled = await fastPathExecution("lapse-canceled", { offered: true });
    const completed = await fastPathExecution("lapse-completed", { offered: false });
    const suspended = await fastPathExecution("lapse-suspended", { offered: false });
    const untouched = await fastPathExecution("lapse-untouched", { offered: false });
    const lapsedAt = clock.advance(LEASE_MS + 1000);
    expect(await lapsedNow(lapsedAt)).toEqual([canceled, completed, suspended, untouched].sort());

    // Meanwhile, on another connection: a cancel, a finish, a suspension.
    const later = clock.advance(10);
    expect((await transitionRun(te.db.pool, canceled, "CANCELED", later, { set: { finished_at: later, claim_token: null, lease_expires_at: null, offered_at: null } })).changed).toBe(true);
    expect((await transitionRun(te.db.pool, completed, "COMPLETED", later, { set: { finished_at: later, claim_token: null, lease_expires_at: null } })).changed).toBe(true);
    expect((await transitionRun(te.db.pool, suspended, "WAITING", later, { set: { claim_token: null, lease_expires_at: null } })).changed).toBe(true);
    const before = { canceled: await row(canceled), completed: await row(completed), suspended: await row(suspended) };

    const now = clock.advance(10);
    expect((await requeueLapsed(te.db.pool, [canceled, completed, untouched], now)).map((r) => r.id)).toEqual([untouched]);
    expect(await crashLapsed(te.db.pool, [suspended], now, { message: "lapsed" })).toEqual([]);

    expect(await row(canceled)).toEqual(before.canceled);
    expect(await row(completed)).toEqual(before.completed);
    expect(await row(suspended)).toEqual(before.suspended);
    expect(await row(untouched)).toMatchObject({ status: "QUEUED", claim_token: null, lease_expires_at: null, worker_id: null });
  });

  it("leave alone a run that is still EXECUTING but no longer lapsed: its lease was renewed, offered or not", async () => {
    const offered = await fastPathExecution("lapse-offer-taken", { offered: true });
    const renewed = await fastPathExecution("lapse-renewed", { offered: false });
    const lapsedAt = clock.advance(LEASE_MS + 1000);
    const found = await lapsedNow(lapsedAt);
    expect(found).toEqual([offered, renewed].sort());

    // Meanwhile: the workers renew their leases, as they do.
    const leaseUntil = new Date(lapsedAt.getTime() + LEASE_MS);
    await te.db.pool.query(`UPDATE runs SET lease_expires_at = $2 WHERE id = $1`, [offered, leaseUntil]);
    await te.db.pool.query(`UPDATE runs SET lease_expires_at = $2 WHERE id = $1`, [renewed, leaseUntil]);
    const before = { offered: await row(offered), renewed: await row(renewed) };

    expect(await requeueLapsed(te.db.pool, found, lapsedAt)).toEqual([]);
    expect(await crashLapsed(te.db.pool, found, lapsedAt, { message: "lapsed" })).toEqual([]);

    expect(await row(offered)).toEqual(before.offered);
    expect(await row(renewed)).toEqual(before.renewed);
    expect(before.offered).toMatchObject({ status: "EXECUTING", claim_token: "claim_lapse-offer-taken" });
  });
});
