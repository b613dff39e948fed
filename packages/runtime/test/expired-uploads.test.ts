// Upload URLs nobody used are deleted once they expire; uploaded packets stay.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureDefaultProject,
  expiredUploads,
  FakeClock,
  fireAllDue,
  presignPacketUpload,
  SecretBox,
  storePacketUpload,
  withTransaction,
  type EngineDeps,
} from "@svc/runtime/engine";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";

let db: TestDatabase;
let engine: EngineDeps;
let envId: string;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));

beforeAll(async () => {
  db = await createTestDatabase();
  engine = { db: db.pool, clock, dispatcher: { dispatch: async () => {} }, secrets: new SecretBox("test-encryption-key-0123456789"), apiUrl: "http://svc.test" };
  const project = await withTransaction(db.pool, (tx) => ensureDefaultProject(tx, engine.secrets, clock.now()));
  envId = project.environments.dev.id;
});
afterAll(async () => db?.drop());

const paths = async () => (await db.pool.query<{ path: string }>(`SELECT path FROM packets ORDER BY path`)).rows.map((r) => r.path);

describe("expired upload URLs", () => {
  it("are deleted by the timer pass once they expire, and uploaded packets are kept", async () => {
    await presignPacketUpload(db.pool, envId, "never-used/payload.json", clock.now());
    const token = await presignPacketUpload(db.pool, envId, "uploaded/payload.json", clock.now());
    await storePacketUpload(db.pool, token, "application/json", Buffer.from("{}"), clock.now());
    expect(await expiredUploads.nextDue(db.pool)).toEqual(new Date(clock.now().getTime() + 3_600_000));

    clock.advance(3_600_000 - 1);
    await fireAllDue(engine, clock.now());
    expect(await paths()).toEqual(["never-used/payload.json", "uploaded/payload.json"]);

    clock.advance(1);
    await fireAllDue(engine, clock.now());
    expect(await paths()).toEqual(["uploaded/payload.json"]);
    expect(await expiredUploads.nextDue(db.pool)).toBeNull();
  });
});
