// wait.createToken inside a run creates its token in the transaction that records it. That
// transaction holds a pool connection, so everything else the token needs from the pool (the
// environment's signing key, for its URL and public access token) is read before it opens: a
// transaction waiting for a second connection of an exhausted pool would never end.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callbackUrl, environmentSigningKey, withTransaction } from "@svc/runtime/engine";
import { tokenCreator } from "../src/execution/create-token.ts";
import { startTestEngine, type TestEngine } from "./harness.ts";

let te: TestEngine;
let onePool: pg.Pool;

beforeAll(async () => {
  te = await startTestEngine();
  // One connection, and a short wait for it: needing a second one fails fast instead of hanging.
  onePool = new pg.Pool({ connectionString: te.db.url, max: 1, connectionTimeoutMillis: 2000 });
});
afterAll(async () => {
  await onePool?.end();
  await te?.close();
});

describe("a token created inside a run's transaction", () => {
  it("needs no second pool connection while the transaction holds one (signing key read before)", async () => {
    // A fresh pool: the signing-key cache (per pool) is cold, so the key is read from the database.
    const engine = { ...te.engine, db: onePool };
    const make = await tokenCreator(engine)(te.env, { timeout: "1h", tags: ["in-tx"] });
    const token = await withTransaction(onePool, (tx) => make(tx));

    expect(token.id).toMatch(/^waitpoint_/);
    expect(token.isCached).toBe(false);
    expect(token.url).toBe(callbackUrl(te.engine.apiUrl, token.id, await environmentSigningKey(te.engine, te.env)));
    const claims = JSON.parse(Buffer.from(token.publicAccessToken.split(".")[1]!, "base64url").toString()) as { sub: string; pub: boolean; scopes: string[] };
    expect(claims).toMatchObject({ sub: te.env.id, pub: true, scopes: [`write:waitpoints:${token.id}`] });
    const { rows } = await te.db.pool.query<{ tags: string[] }>(`SELECT tags FROM waitpoints WHERE id = $1`, [token.id]);
    expect(rows[0]!.tags).toEqual(["in-tx"]);
  });

  it("exists only if the transaction commits", async () => {
    const make = await tokenCreator({ ...te.engine, db: onePool })(te.env, { tags: ["rolled-back"] });
    let id = "";
    await expect(
      withTransaction(onePool, async (tx) => {
        id = (await make(tx)).id;
        throw new Error("the ledger record failed");
      }),
    ).rejects.toThrow("the ledger record failed");
    const { rows } = await te.db.pool.query(`SELECT 1 FROM waitpoints WHERE id = $1`, [id]);
    expect(rows).toEqual([]);
  });
});
