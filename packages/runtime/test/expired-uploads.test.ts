// Upload URLs nobody used are deleted once they expire; uploaded packets stay.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expiredUploads, FakeClock, fireAllDue, presignPacketUpload, storePacketUpload } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";

let te: TestEngine;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

const paths = async () => (await te.db.pool.query<{ path: string }>(`SELECT path FROM packets ORDER BY path`)).rows.map((r) => r.path);

describe("expired upload URLs", () => {
  it("are deleted by the timer pass once they expire, and uploaded packets are kept", async () => {
    await presignPacketUpload(te.db.pool, te.env.id, "never-used/payload.json", clock.now());
    const token = await presignPacketUpload(te.db.pool, te.env.id, "uploaded/payload.json", clock.now());
    await storePacketUpload(te.db.pool, token, "application/json", Buffer.from("{}"), clock.now());
    expect(await expiredUploads.nextDue(te.db.pool)).toEqual(new Date(clock.now().getTime() + 3_600_000));

    clock.advance(3_600_000 - 1);
    await fireAllDue(te.engine, clock.now());
    expect(await paths()).toEqual(["never-used/payload.json", "uploaded/payload.json"]);

    clock.advance(1);
    await fireAllDue(te.engine, clock.now());
    expect(await paths()).toEqual(["uploaded/payload.json"]);
    expect(await expiredUploads.nextDue(te.db.pool)).toBeNull();
  });
});
