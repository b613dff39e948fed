// connectEngine: a backend completes a token inside its own transaction, through its own pool and
// queue client; the waiting run resumes if and only if that transaction commits.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction, type Queryable } from "@svc/runtime/db";
import { CHANNELS, completeToken, createToken, newId, NotFoundError, parseResumePayload } from "@svc/runtime/engine";
import { connectEngine, type EngineConnection } from "../src/index.ts";
import { startTestEngine, TEST_ENCRYPTION_KEY, type TestEngine } from "./harness.ts";

let te: TestEngine;
let engine: EngineConnection;
let resumes: Awaited<ReturnType<typeof listenForResumes>>;
beforeAll(async () => {
  te = await startTestEngine();
  engine = await connectEngine({ databaseUrl: te.db.url, encryptionKey: TEST_ENCRYPTION_KEY, apiUrl: "http://svc.test" });
  await te.db.pool.query(`CREATE TABLE approvals (token_id text PRIMARY KEY, approved_by text NOT NULL)`);
  resumes = await listenForResumes(te.db.url);
});
afterAll(async () => {
  await resumes?.close();
  await engine?.close();
  await te?.close();
});

async function newToken(): Promise<string> {
  return (await createToken(te.engine, te.env.id, {})).waitpoint.id;
}

async function tokenRow(id: string) {
  const { rows } = await te.db.pool.query(`SELECT * FROM waitpoints WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * A run suspended in `wait.forToken(tokenId)`, made by SQL: a WAITING run with one unresolved
 * ledger row pointing at the token (what the in-run side writes before it suspends).
 */
async function waitingRunOn(db: Queryable, environmentId: string, tokenId: string): Promise<string> {
  const runId = newId.run();
  await db.query(
    `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name)
     SELECT $1, e.id, e.project_id, 'approval-task', 'WAITING', 'task/approval-task' FROM environments e WHERE e.id = $2`,
    [runId, environmentId],
  );
  await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id) VALUES ($1, 0, 'token#0', 'token', $2, $2)`,
    [runId, tokenId],
  );
  return runId;
}

/** Whether the run's resume is recorded as due (set by a completion, cleared by a worker's claim). */
async function resumeDue(db: Queryable, runId: string): Promise<boolean> {
  const { rows } = await db.query<{ due: boolean }>(`SELECT resume_due_at IS NOT NULL AS due FROM runs WHERE id = $1`, [runId]);
  return rows[0]!.due;
}

async function ledgerRow(db: Queryable, runId: string) {
  const { rows } = await db.query(`SELECT resolved, outcome FROM run_ledger WHERE run_id = $1`, [runId]);
  return rows[0] as { resolved: boolean; outcome: { ok: boolean; output?: string | null } };
}

/** Listens on the resume channel, as workers do, and counts the wake-ups that name a run. */
async function listenForResumes(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`LISTEN "${CHANNELS.resume}"`);
  const payloads: string[] = [];
  client.on("notification", (m) => payloads.push(m.payload ?? ""));
  return {
    /** Wake-ups naming `runId` so far: a sentinel NOTIFY sent now arrives after all committed before it. */
    async count(runId: string): Promise<number> {
      const sentinel = `flush ${randomUUID()}`;
      const flushed = new Promise<void>((resolve) => {
        const onNotification = (m: pg.Notification) => {
          if (m.payload !== sentinel) return;
          client.off("notification", onNotification);
          resolve();
        };
        client.on("notification", onNotification);
      });
      await client.query(`SELECT pg_notify($1, $2)`, [CHANNELS.resume, sentinel]);
      await flushed;
      return payloads.filter((p) => parseResumePayload(p)?.runIds.includes(runId)).length;
    },
    close: () => client.end(),
  };
}

describe("completeToken inside a backend's own transaction (connectEngine)", () => {
  it("completes the token, resolves the ledger and enqueues the resume when the transaction commits", async () => {
    const tokenId = await newToken();
    const envId = te.env.id;
    const runId = await waitingRunOn(te.db.pool, envId, tokenId);
    const result = await withTransaction(engine.deps.db, async (tx) => {
      await tx.query(`INSERT INTO approvals (token_id, approved_by) VALUES ($1, 'ada')`, [tokenId]);
      return completeToken(engine.deps, tx, tokenId, { approved: true });
    });
    expect(result).toMatchObject({ changed: true, resumedRunIds: [runId] });
    expect(await tokenRow(tokenId)).toMatchObject({ status: "COMPLETED", output: '{"approved":true}' });
    expect(await ledgerRow(te.db.pool, runId)).toMatchObject({ resolved: true, outcome: { ok: true, output: '{"approved":true}' } });
    expect(await resumeDue(te.db.pool, runId)).toBe(true);
    expect(await resumes.count(runId)).toBe(1);
    expect((await te.db.pool.query(`SELECT approved_by FROM approvals WHERE token_id = $1`, [tokenId])).rows).toEqual([{ approved_by: "ada" }]);
  });

  it("leaves the token waiting and enqueues nothing when the transaction rolls back", async () => {
    const tokenId = await newToken();
    const envId = te.env.id;
    const runId = await waitingRunOn(te.db.pool, envId, tokenId);
    const failure = withTransaction(engine.deps.db, async (tx) => {
      await tx.query(`INSERT INTO approvals (token_id, approved_by) VALUES ($1, 'bob')`, [tokenId]);
      await completeToken(engine.deps, tx, tokenId, { approved: true });
      throw new Error("the backend's own write failed after the completion");
    });
    await expect(failure).rejects.toThrow(/own write failed/);
    expect(await tokenRow(tokenId)).toMatchObject({ status: "WAITING", output: null });
    expect(await ledgerRow(te.db.pool, runId)).toMatchObject({ resolved: false, outcome: null });
    expect(await resumeDue(te.db.pool, runId)).toBe(false);
    expect(await resumes.count(runId)).toBe(0);
    expect((await te.db.pool.query(`SELECT 1 FROM approvals WHERE token_id = $1`, [tokenId])).rowCount).toBe(0);
    // The token can still be completed afterwards.
    const later = await withTransaction(engine.deps.db, (tx) => completeToken(engine.deps, tx, tokenId, "later"));
    expect(later.changed).toBe(true);
    expect(await resumeDue(te.db.pool, runId)).toBe(true);
    expect(await resumes.count(runId)).toBe(1);
  });

  it("reports an already completed token as unchanged and an unknown one as NotFoundError", async () => {
    const tokenId = await newToken();
    await withTransaction(engine.deps.db, (tx) => completeToken(engine.deps, tx, tokenId, 1));
    const again = await withTransaction(engine.deps.db, (tx) => completeToken(engine.deps, tx, tokenId, 2));
    expect(again.changed).toBe(false);
    expect((await tokenRow(tokenId)).output).toBe("1");
    await expect(withTransaction(engine.deps.db, (tx) => completeToken(engine.deps, tx, "waitpoint_missing", 1))).rejects.toBeInstanceOf(NotFoundError);
    const otherEnv = withTransaction(engine.deps.db, (tx) =>
      completeToken(engine.deps, tx, tokenId, 1, { environmentId: te.project.environments.prod.id }),
    );
    await expect(otherEnv).rejects.toBeInstanceOf(NotFoundError);
  });

  it("refuses an output that cannot be JSON-encoded", async () => {
    const tokenId = await newToken();
    const res = withTransaction(engine.deps.db, (tx) => completeToken(engine.deps, tx, tokenId, { n: 1n }));
    await expect(res).rejects.toThrow(/output: cannot be serialised as JSON/);
    expect((await tokenRow(tokenId)).status).toBe("WAITING");
  });
});
