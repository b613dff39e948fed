// listTokenRows takes a different statement for each filter shape (migration 0030): no status,
// one status, several statuses (one ordered branch per status, merged), an idempotency key (held or
// retired). Every combination must return exactly the tokens the filters describe, in
// (created_at, id) order, and pages walked forwards and backwards must be that order without gaps
// or repeats, ties on created_at included.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  completeToken,
  createToken,
  FakeClock,
  fireAllDue,
  listTokenRows,
  WAITPOINT_STATUSES,
  type TokenListFilter,
  type WaitpointStatus,
} from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";

const T0 = new Date("2031-07-08T09:00:00.000Z");
const clock = new FakeClock(T0);
let te: TestEngine;
let envId: string;

interface TokenFacts {
  id: string;
  created_at: Date;
  status: WaitpointStatus;
  tags: string[];
  idempotency_key: string | null;
  inactive_idempotency_key: string | null;
}
/** The environment's tokens, newest first by (created_at, id) as Postgres orders them. */
let tokens: TokenFacts[];

beforeAll(async () => {
  te = await startTestEngine({ clock });
  envId = te.env.id;
  const prodId = te.project.environments.prod.id;
  // 36 tokens in the environment, 6 in another, interleaved; three in each millisecond where i % 4 < 3
  // (ties broken by id). A third stays WAITING, a third is completed, a third times out.
  for (let i = 0; i < 42; i++) {
    if (i % 4 === 0) clock.advance(1);
    const environment = i % 7 === 3 ? prodId : envId;
    const tags = i % 5 === 0 ? ["blue", "red"] : i % 4 === 0 ? ["red"] : [];
    const { waitpoint } = await createToken(te.engine, environment, { timeout: i % 3 === 2 ? "1s" : "1h", tags });
    if (i % 3 === 1) await completeToken(te.engine, te.engine.db, waitpoint.id, { i });
  }
  // One key held by three tokens in turn (each reuse past its TTL retires it on the older token):
  // the first completed, the second tagged and timed out, the third waiting.
  for (const [j, env] of [envId, envId, envId, prodId].entries()) {
    clock.advance(5_000);
    const { waitpoint } = await createToken(te.engine, env, { idempotencyKey: "shared", idempotencyKeyTTL: "1s", timeout: j === 1 ? "2s" : "1h", tags: j === 1 ? ["red"] : [] });
    if (j === 0) await completeToken(te.engine, te.engine.db, waitpoint.id, {});
  }
  clock.advance(5_000);
  await fireAllDue(te.engine, clock.now());
  // Not tokens: never listed, whatever the filter.
  await te.db.pool.query(
    `INSERT INTO waitpoints (id, environment_id, type, status, idempotency_key, tags, created_at) VALUES
       ('waitpoint_run1', $1, 'RUN', 'WAITING', NULL, '{red}', $2), ('waitpoint_dt1', $1, 'DATETIME', 'COMPLETED', 'shared2', '{}', $2)`,
    [envId, new Date(T0.getTime() + 3)],
  );
  const { rows } = await te.db.pool.query<TokenFacts>(
    `SELECT id, created_at, status, tags, idempotency_key, inactive_idempotency_key FROM waitpoints
     WHERE environment_id = $1 AND type = 'MANUAL' ORDER BY created_at DESC, id DESC`,
    [envId],
  );
  tokens = rows;
});
afterAll(async () => te?.close());

const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

function expected(filter: TokenListFilter): string[] {
  return ids(
    tokens.filter(
      (t) =>
        (!filter.statuses || filter.statuses.includes(t.status)) &&
        (!filter.tags || t.tags.some((tag) => filter.tags!.includes(tag))) &&
        (filter.idempotencyKey === undefined || t.idempotency_key === filter.idempotencyKey || t.inactive_idempotency_key === filter.idempotencyKey) &&
        (!filter.createdFrom || t.created_at >= filter.createdFrom) &&
        (!filter.createdTo || t.created_at <= filter.createdTo),
    ),
  );
}

/** Every page of `size`, forwards (`page[after]`) and backwards (`page[before]`, ascending pages), as the API asks. */
async function walk(filter: TokenListFilter, size: number) {
  const forwards: string[] = [];
  let after: { created_at: Date; id: string } | undefined;
  for (;;) {
    const keyset = after ? { sql: "(created_at, id) < ($1, $2)", values: [after.created_at, after.id] } : null;
    const page = await listTokenRows(te.engine.db, envId, filter, keyset, "desc", size);
    expect(page.length).toBeLessThanOrEqual(size);
    if (page.length === 0) break;
    forwards.push(...ids(page));
    after = page[page.length - 1];
  }
  const backwards: string[] = [];
  let before = { created_at: new Date(0), id: "" };
  for (;;) {
    const keyset = { sql: "(created_at, id) > ($1, $2)", values: [before.created_at, before.id] };
    const page = await listTokenRows(te.engine.db, envId, filter, keyset, "asc", size);
    if (page.length === 0) break;
    backwards.unshift(...ids(page).reverse());
    before = page[page.length - 1]!;
  }
  return { forwards, backwards };
}

const STATUS_SETS: (WaitpointStatus[] | undefined)[] = [
  undefined,
  ...WAITPOINT_STATUSES.map((s) => [s]),
  ["WAITING", "TIMED_OUT"],
  ["COMPLETED", "WAITING"],
  ["TIMED_OUT", "COMPLETED"],
  ["TIMED_OUT", "WAITING", "COMPLETED", "WAITING"],
];

describe("listTokenRows", () => {
  it("holds tokens of every status, tied creation times and a key held by three tokens (the fixture)", () => {
    for (const s of WAITPOINT_STATUSES) expect(tokens.filter((t) => t.status === s).length).toBeGreaterThan(5);
    expect(new Set(tokens.map((t) => t.created_at.getTime())).size).toBeLessThan(tokens.length - 10);
    expect(tokens.filter((t) => t.inactive_idempotency_key === "shared")).toHaveLength(2);
    expect(tokens.filter((t) => t.idempotency_key === "shared")).toHaveLength(1);
    expect(new Set(tokens.filter((t) => t.idempotency_key === "shared" || t.inactive_idempotency_key === "shared").map((t) => t.status)).size).toBe(3);
  });

  it("returns exactly the filtered tokens, in order, for every combination of status, tag, key and range, on any page size", async () => {
    const range = { createdFrom: new Date(T0.getTime() + 3), createdTo: new Date(T0.getTime() + 8) };
    let nonEmpty = 0;
    for (const statuses of STATUS_SETS) {
      for (const tags of [undefined, ["red"], ["nope"]]) {
        for (const idempotencyKey of [undefined, "shared", "shared2"]) {
          for (const dates of [{}, range]) {
            const filter: TokenListFilter = { ...dates, ...(statuses && { statuses }), ...(tags && { tags }), ...(idempotencyKey !== undefined && { idempotencyKey }) };
            const want = expected(filter);
            if (want.length > 0) nonEmpty++;
            const label = JSON.stringify(filter);
            expect(ids(await listTokenRows(te.engine.db, envId, filter, null, "desc", 100)), label).toEqual(want);
            const { forwards, backwards } = await walk(filter, 3);
            expect(forwards, label).toEqual(want);
            expect(backwards, label).toEqual(want);
          }
        }
      }
    }
    expect(nonEmpty).toBeGreaterThan(40);
  });

  it("pages one token at a time through several statuses with ties on created_at", async () => {
    for (const statuses of [["WAITING", "TIMED_OUT"], ["COMPLETED", "TIMED_OUT"]] as WaitpointStatus[][]) {
      const { forwards, backwards } = await walk({ statuses }, 1);
      expect(forwards).toEqual(expected({ statuses }));
      expect(backwards).toEqual(expected({ statuses }));
    }
  });

  it("leaves out each token's output, which a list never shows", async () => {
    for (const statuses of [undefined, ["COMPLETED"], ["COMPLETED", "WAITING"]] as (WaitpointStatus[] | undefined)[]) {
      const rows = await listTokenRows(te.engine.db, envId, statuses ? { statuses } : {}, null, "desc", 5);
      expect(rows.find((r) => r.status === "COMPLETED")).toMatchObject({ output_type: "application/json", completed_at: expect.any(Date) });
      for (const row of rows) expect(row).not.toHaveProperty("output");
    }
  });

  it("returns the newest `limit` tokens of several statuses, however many each status has", async () => {
    for (const limit of [1, 2, 5, 13]) {
      const statuses: WaitpointStatus[] = ["WAITING", "COMPLETED"];
      expect(ids(await listTokenRows(te.engine.db, envId, { statuses }, null, "desc", limit))).toEqual(expected({ statuses }).slice(0, limit));
      expect(ids(await listTokenRows(te.engine.db, envId, { statuses }, null, "asc", limit))).toEqual(expected({ statuses }).reverse().slice(0, limit));
    }
  });
});
