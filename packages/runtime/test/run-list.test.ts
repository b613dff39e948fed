// listRuns over several environments: each environment is read in its own LATERAL subquery (so that
// runs_list serves the page in order) and the page is the newest `limit` of their rows. Pages walked
// forwards and backwards must be the one merged order, without gaps or repeats, however the
// environments' runs interleave in time and tie on created_at.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, getEnvironment, listRuns, triggerRun, type Environment, type RunListFilters } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";

const T0 = new Date("2031-05-06T07:00:00.000Z");
const clock = new FakeClock(T0);
let te: TestEngine;
let envs: Environment[];
/** Every run made, newest first by (created_at, id), as the list orders them. */
let expected: { id: string; created_at: Date; environment_id: string; tags: string[] }[];

beforeAll(async () => {
  te = await startTestEngine({ clock });
  envs = [te.env, (await getEnvironment(te.db.pool, te.project.environments.prod.id))!, (await getEnvironment(te.db.pool, te.project.environments.staging.id))!];
  // 30 runs over three environments, unevenly interleaved; every third millisecond holds two runs
  // (of different environments) so ties on created_at are broken by id across environments.
  for (let i = 0; i < 30; i++) {
    clock.set(new Date(T0.getTime() + Math.floor(i / 2) * (i % 3 === 0 ? 1 : 7)));
    await triggerRun(te.engine, envs[(i * 7) % 5 < 3 ? (i * 7) % 5 : 0]!, "list-me", {}, { tags: i % 4 === 0 ? ["quarter"] : [] });
  }
  const { rows } = await te.db.pool.query(`SELECT id, created_at, environment_id, tags FROM runs ORDER BY created_at DESC, id DESC`);
  expected = rows;
});
afterAll(async () => te?.close());

const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

async function walk(environmentIds: string[], filters: RunListFilters, size: number) {
  const forwards: string[][] = [];
  let after: { created_at: Date; id: string } | undefined;
  for (;;) {
    const page = await listRuns(te.engine.db, environmentIds, filters, {
      keyset: after ? { sql: "(created_at, id) < ($1, $2)", values: [after.created_at, after.id] } : null,
      direction: "desc",
      limit: size,
    });
    if (page.length === 0) break;
    forwards.push(ids(page));
    after = page[page.length - 1];
  }
  // Backwards from past the oldest run: ascending pages, as the API asks for `page[before]`.
  const backwards: string[][] = [];
  let before: { created_at: Date; id: string } = { created_at: new Date(0), id: "" };
  for (;;) {
    const page = await listRuns(te.engine.db, environmentIds, filters, {
      keyset: { sql: "(created_at, id) > ($1, $2)", values: [before.created_at, before.id] },
      direction: "asc",
      limit: size,
    });
    if (page.length === 0) break;
    backwards.push(ids(page));
    before = page[page.length - 1]!;
  }
  return { forwards: forwards.flat(), backwards: backwards.flat().reverse() };
}

describe("listRuns over several environments", () => {
  it("pages through the merged order of every environment, forwards and backwards", async () => {
    const all = envs.map((e) => e.id);
    for (const size of [1, 4, 7, 100]) {
      const { forwards, backwards } = await walk(all, {}, size);
      expect(forwards).toEqual(ids(expected));
      expect(backwards).toEqual(ids(expected));
    }
  });

  it("applies the filters in each environment and leaves out the environments not asked for", async () => {
    const two = [envs[0]!.id, envs[2]!.id];
    const { forwards } = await walk(two, { tags: ["quarter"] }, 2);
    expect(forwards).toEqual(ids(expected.filter((r) => two.includes(r.environment_id) && r.tags.includes("quarter"))));
    expect(forwards.length).toBeGreaterThan(2);
  });

  it("returns at most `limit` runs, the newest, however many environments have that many", async () => {
    const page = await listRuns(te.engine.db, envs.map((e) => e.id), {}, { keyset: null, direction: "desc", limit: 5 });
    expect(ids(page)).toEqual(ids(expected).slice(0, 5));
    expect(new Set(page.map((r) => r.environment_id)).size).toBeGreaterThan(1);
  });
});
