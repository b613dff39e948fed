// connectEngine is the worker package's client for backends; the tokens and waiting runs it completes are
// made through the API, so this test borrows the API's test harness (a test-only import, not a dependency).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "@svc/runtime/db";
import { completeToken, NotFoundError } from "@svc/runtime/engine";
import { connectEngine, type EngineConnection } from "../src/index.ts";
import { startTestApi, TEST_ENCRYPTION_KEY, type TestApi } from "../../api/test/harness.ts";
import { createTokenOk, ledgerRow, resumeDue, listenForResumes, tokenRow, waitingRunOn } from "../../api/test/waitpoints-helpers.ts";

let api: TestApi;
let engine: EngineConnection;
let resumes: Awaited<ReturnType<typeof listenForResumes>>;
beforeAll(async () => {
  api = await startTestApi();
  engine = await connectEngine({ databaseUrl: api.db.url, encryptionKey: TEST_ENCRYPTION_KEY, apiUrl: "http://svc.test" });
  await api.db.pool.query(`CREATE TABLE approvals (token_id text PRIMARY KEY, approved_by text NOT NULL)`);
  resumes = await listenForResumes(api.db.url);
});
afterAll(async () => {
  await resumes?.close();
  await engine?.close();
  await api?.close();
});

describe("completeToken inside a backend's own transaction (connectEngine)", () => {
  it("completes the token, resolves the ledger and enqueues the resume when the transaction commits", async () => {
    const token = await createTokenOk(api);
    const envId = api.project.environments.dev.id;
    const runId = await waitingRunOn(api.db.pool, envId, token.id);
    const result = await withTransaction(engine.deps.db, async (tx) => {
      await tx.query(`INSERT INTO approvals (token_id, approved_by) VALUES ($1, 'ada')`, [token.id]);
      return completeToken(engine.deps, tx, token.id, { approved: true });
    });
    expect(result).toMatchObject({ changed: true, resumedRunIds: [runId] });
    expect(await tokenRow(api, token.id)).toMatchObject({ status: "COMPLETED", output: '{"approved":true}' });
    expect(await ledgerRow(api.db.pool, runId)).toMatchObject({ resolved: true, outcome: { ok: true, output: '{"approved":true}' } });
    expect(await resumeDue(api.db.pool, runId)).toBe(true);
    expect(await resumes.count(runId)).toBe(1);
    expect((await api.db.pool.query(`SELECT approved_by FROM approvals WHERE token_id = $1`, [token.id])).rows).toEqual([{ approved_by: "ada" }]);
  });

  it("leaves the token waiting and enqueues nothing when the transaction rolls back", async () => {
    const token = await createTokenOk(api);
    const envId = api.project.environments.dev.id;
    const runId = await waitingRunOn(api.db.pool, envId, token.id);
    const failure = withTransaction(engine.deps.db, async (tx) => {
      await tx.query(`INSERT INTO approvals (token_id, approved_by) VALUES ($1, 'bob')`, [token.id]);
      await completeToken(engine.deps, tx, token.id, { approved: true });
      throw new Error("the backend's own write failed after the completion");
    });
    await expect(failure).rejects.toThrow(/own write failed/);
    expect(await tokenRow(api, token.id)).toMatchObject({ status: "WAITING", output: null });
    expect(await ledgerRow(api.db.pool, runId)).toMatchObject({ resolved: false, outcome: null });
    expect(await resumeDue(api.db.pool, runId)).toBe(false);
    expect(await resumes.count(runId)).toBe(0);
    expect((await api.db.pool.query(`SELECT 1 FROM approvals WHERE token_id = $1`, [token.id])).rowCount).toBe(0);
    // The token can still be completed afterwards.
    const later = await withTransaction(engine.deps.db, (tx) => completeToken(engine.deps, tx, token.id, "later"));
    expect(later.changed).toBe(true);
    expect(await resumeDue(api.db.pool, runId)).toBe(true);
    expect(await resumes.count(runId)).toBe(1);
  });

  it("reports an already completed token as unchanged and an unknown one as NotFoundError", async () => {
    const token = await createTokenOk(api);
    await withTransaction(engine.deps.db, (tx) => completeToken(engine.deps, tx, token.id, 1));
    const again = await withTransaction(engine.deps.db, (tx) => completeToken(engine.deps, tx, token.id, 2));
    expect(again.changed).toBe(false);
    expect((await tokenRow(api, token.id)).output).toBe("1");
    await expect(withTransaction(engine.deps.db, (tx) => completeToken(engine.deps, tx, "waitpoint_missing", 1))).rejects.toBeInstanceOf(NotFoundError);
    const otherEnv = withTransaction(engine.deps.db, (tx) =>
      completeToken(engine.deps, tx, token.id, 1, { environmentId: api.project.environments.prod.id }),
    );
    await expect(otherEnv).rejects.toBeInstanceOf(NotFoundError);
  });

  it("refuses an output that cannot be JSON-encoded", async () => {
    const token = await createTokenOk(api);
    const res = withTransaction(engine.deps.db, (tx) => completeToken(engine.deps, tx, token.id, { n: 1n }));
    await expect(res).rejects.toThrow(/output: cannot be serialised as JSON/);
    expect((await tokenRow(api, token.id)).status).toBe("WAITING");
  });
});
