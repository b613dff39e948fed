// The timer pass fires every kind of due work: one that fails does not hold back the others.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  delayedRuns,
  ensureDefaultProject,
  FakeClock,
  fireAllDue,
  getEnvironment,
  SecretBox,
  triggerRun,
  withTransaction,
  type DueWork,
  type EngineDeps,
  type Environment,
} from "@svc/runtime/engine";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";

let db: TestDatabase;
let engine: EngineDeps;
let env: Environment;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));

beforeAll(async () => {
  db = await createTestDatabase();
  engine = { db: db.pool, clock, dispatcher: { dispatch: async () => {} }, secrets: new SecretBox("test-encryption-key-0123456789"), apiUrl: "http://svc.test" };
  const project = await withTransaction(db.pool, (tx) => ensureDefaultProject(tx, engine.secrets, clock.now()));
  env = (await getEnvironment(db.pool, project.environments.dev.id))!;
});
afterAll(async () => db?.drop());

describe("fireAllDue", () => {
  it("fires the work after one that fails, then reports the failure", async () => {
    const { id } = await triggerRun(engine, env, "later", {}, { delay: "1m" });
    clock.advance(60_000);
    const broken: DueWork = {
      name: "broken",
      fire: async (deps) => (await deps.db.query(`SELECT * FROM no_such_table`)).rowCount ?? 0,
      nextDue: async () => null,
    };
    const pass = fireAllDue(engine, clock.now(), [broken, delayedRuns]);
    await expect(pass).rejects.toThrow(/broken: relation "no_such_table" does not exist/);
    const { rows } = await db.pool.query(`SELECT status FROM runs WHERE id = $1`, [id]);
    expect(rows[0].status).toBe("QUEUED");
  });
});
