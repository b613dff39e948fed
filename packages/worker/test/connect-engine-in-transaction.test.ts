// connectEngine: a backend completes a token inside its own transaction, through its own pool and
// queue client; the waiting run resumes if and only if that transaction commits.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "@svc/runtime/db";
import { ledgerRow, listenForResumes, resumeDue, waitingRunOn } from "@svc/runtime/testing";
import { completeToken, createToken, NotFoundError } from "@svc/runtime/engine";
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
