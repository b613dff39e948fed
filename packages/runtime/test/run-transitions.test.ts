// The run state machine against real rows: every transition the table allows goes through the
// guarded update; every other pair is refused, whether asked for explicitly or not.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canTransition, IllegalTransitionError, RUN_STATUSES, sourcesOf, systemClock, transitionRun, triggerRun, type RunStatus } from "@svc/runtime/engine";
import { startTestEngine, type TestDatabase, type TestEngine } from "@svc/runtime/testing";

let te: TestEngine;
let db: TestDatabase;
let runId: string;

const allowed: [RunStatus, RunStatus][] = [];
const refused: [RunStatus, RunStatus][] = [];
for (const from of RUN_STATUSES) for (const to of RUN_STATUSES) (canTransition(from, to) ? allowed : refused).push([from, to]);

/** Puts the row in `status` without going through the state machine (test set-up only). */
async function force(status: RunStatus) {
  await db.pool.query(`UPDATE runs SET status = $2 WHERE id = $1`, [runId, status]);
}

async function statusNow(): Promise<RunStatus> {
  const { rows } = await db.pool.query<{ status: RunStatus }>(`SELECT status FROM runs WHERE id = $1`, [runId]);
  return rows[0]!.status;
}

beforeAll(async () => {
  te = await startTestEngine();
  db = te.db;
  runId = (await triggerRun(te.engine, te.env, "transitions", {})).id;
});
afterAll(async () => te?.close());

describe("run status transitions on a real row", () => {
  it("performs every allowed transition, with an explicit from and with the default sources", async () => {
    for (const [from, to] of allowed) {
      await force(from);
      const explicit = await transitionRun(db.pool, runId, to, systemClock.now(), { from: [from] });
      expect(explicit.changed, `${from} -> ${to} (explicit)`).toBe(true);
      if (explicit.changed) expect(explicit.run.status).toBe(to);
      expect(await statusNow()).toBe(to);

      await force(from);
      const implicit = await transitionRun(db.pool, runId, to, systemClock.now());
      expect(implicit.changed, `${from} -> ${to} (default from)`).toBe(true);
      expect(await statusNow()).toBe(to);
    }
  });

  it("refuses every disallowed pair asked for explicitly with IllegalTransitionError, leaving the row alone", async () => {
    for (const [from, to] of refused) {
      await force(from);
      const attempt = transitionRun(db.pool, runId, to, systemClock.now(), { from: [from] });
      await expect(attempt, `${from} -> ${to}`).rejects.toBeInstanceOf(IllegalTransitionError);
      await expect(transitionRun(db.pool, runId, to, systemClock.now(), { from: [from] })).rejects.toThrow(`illegal run transition ${from} -> ${to}`);
      expect(await statusNow()).toBe(from);
    }
  });

  it("answers { changed: false } for a disallowed pair when the caller does not name the source", async () => {
    for (const [from, to] of refused) {
      await force(from);
      const result = await transitionRun(db.pool, runId, to, systemClock.now());
      expect(result, `${from} -> ${to}`).toEqual({ changed: false });
      expect(await statusNow()).toBe(from);
    }
  });

  it("answers { changed: false } when the row is in another state than the allowed source asked for", async () => {
    for (const [from, to] of allowed) {
      const other = RUN_STATUSES.find((s) => s !== from)!;
      await force(other);
      const result = await transitionRun(db.pool, runId, to, systemClock.now(), { from: [from] });
      expect(result, `${from} -> ${to} with the row ${other}`).toEqual({ changed: false });
      expect(await statusNow()).toBe(other);
    }
  });

  it("refuses a from list that mixes allowed and disallowed sources before touching the row", async () => {
    await force("QUEUED");
    await expect(transitionRun(db.pool, runId, "EXECUTING", systemClock.now(), { from: ["QUEUED", "COMPLETED"] })).rejects.toBeInstanceOf(IllegalTransitionError);
    expect(await statusNow()).toBe("QUEUED");
  });

  it("never leaves a final status: no status can be reached from one", () => {
    for (const final of ["COMPLETED", "CANCELED", "FAILED", "CRASHED", "SYSTEM_FAILURE", "EXPIRED", "TIMED_OUT"] as RunStatus[]) {
      for (const to of RUN_STATUSES) expect(sourcesOf(to)).not.toContain(final);
    }
  });

  it("applies the extra fence: a transition whose claim token does not match changes nothing", async () => {
    await force("EXECUTING");
    await db.pool.query(`UPDATE runs SET claim_token = 'mine' WHERE id = $1`, [runId]);
    const stale = await transitionRun(db.pool, runId, "COMPLETED", systemClock.now(), { from: ["EXECUTING"], extraWhere: { sql: "claim_token = $1", values: ["theirs"] } });
    expect(stale).toEqual({ changed: false });
    expect(await statusNow()).toBe("EXECUTING");
    const current = await transitionRun(db.pool, runId, "COMPLETED", systemClock.now(), { from: ["EXECUTING"], extraWhere: { sql: "claim_token = $1", values: ["mine"] } });
    expect(current.changed).toBe(true);
  });
});
