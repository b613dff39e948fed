// options.rateLimit on a trigger (svc's extension, docs/rate-limits.md): `{ key }` gives the run its
// rate key, `limit` with `period` its own bound; bad values are refused with 400 and why.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

async function trigger(options: unknown, taskId = "hello-world") {
  return api.app.inject({ method: "POST", url: `/api/v1/tasks/${taskId}/trigger`, headers: api.devAuth, payload: { payload: {}, options } as object });
}
async function rateKeyOf(runId: string): Promise<string | null> {
  const { rows } = await api.db.pool.query<{ rate_limit_key: string | null }>(`SELECT rate_limit_key FROM runs WHERE id = $1`, [runId]);
  return rows[0]!.rate_limit_key;
}

describe("options.rateLimit on a trigger", () => {
  it("gives the run its rate key (a number is its text), and a run without one none", async () => {
    expect(await rateKeyOf((await trigger({ rateLimit: { key: "customer-42" } })).json().id)).toBe("customer-42");
    expect(await rateKeyOf((await trigger({ rateLimit: { key: 42 } })).json().id)).toBe("42");
    expect(await rateKeyOf((await trigger({ rateLimit: {} })).json().id)).toBeNull();
    expect(await rateKeyOf((await trigger({})).json().id)).toBeNull();
  });

  it("gives each item of a batch its own key, and a replay its run's", async () => {
    const res = await api.app.inject({
      method: "POST",
      url: "/api/v2/tasks/batch",
      headers: api.devAuth,
      payload: { items: [{ task: "hello-world", payload: 1, options: { rateLimit: { key: "a" } } }, { task: "hello-world", payload: 2, options: { rateLimit: { key: "b" } } }] },
    });
    expect(res.statusCode).toBe(202);
    const { rows } = await api.db.pool.query(`SELECT rate_limit_key FROM runs WHERE batch_id = $1 ORDER BY batch_index`, [res.json().id]);
    expect(rows.map((r) => r.rate_limit_key)).toEqual(["a", "b"]);
    const original = (await trigger({ rateLimit: { key: "replayed" } })).json().id;
    const replay = await api.app.inject({ method: "POST", url: `/api/v1/runs/${original}/replay`, headers: api.devAuth });
    expect(replay.statusCode).toBe(200);
    expect(await rateKeyOf(replay.json().id)).toBe("replayed");
  });

  it("gives the run its own bound (limit and period), kept by a replay and given to the limited claim", async () => {
    const res = await trigger({ rateLimit: { key: "k", limit: 10, period: "1m30s" } });
    expect(res.statusCode).toBe(200);
    const own = async (id: string) =>
      (await api.db.pool.query(`SELECT rate_limit_key, rate_limit, rate_period_ms, claim_from_runs FROM runs WHERE id = $1`, [id])).rows[0];
    expect(await own(res.json().id)).toEqual({ rate_limit_key: "k", rate_limit: 10, rate_period_ms: 90_000, claim_from_runs: false });
    const replay = await api.app.inject({ method: "POST", url: `/api/v1/runs/${res.json().id}/replay`, headers: api.devAuth });
    expect(replay.statusCode).toBe(200);
    expect(await own(replay.json().id)).toEqual({ rate_limit_key: "k", rate_limit: 10, rate_period_ms: 90_000, claim_from_runs: false });
    // Without a key, in whole milliseconds.
    expect(await own((await trigger({ rateLimit: { limit: 1, period: 250 } })).json().id)).toEqual({ rate_limit_key: null, rate_limit: 1, rate_period_ms: 250, claim_from_runs: false });
  });

  it("refuses a limit without a period, bad values and other keys with 400 and why", async () => {
    for (const [rateLimit, error] of [
      [{ key: "k", limit: 10 }, "options.rateLimit: limit and period go together (the run starts only while its key's starts in the last `period` number fewer than `limit`)"],
      [{ limit: 0, period: "1s" }, "options.rateLimit.limit: must be a whole number from 1 to 1,000,000"],
      [{ limit: 1_000_001, period: "1s" }, "options.rateLimit.limit: must be a whole number from 1 to 1,000,000"],
      [{ limit: 2, period: "8d" }, 'options.rateLimit.period: must be a duration ("1s", "10m", "1h") or whole milliseconds, from 1 ms to 7 days'],
      [{ limit: 2, period: 1.5 }, 'options.rateLimit.period: must be a duration ("1s", "10m", "1h") or whole milliseconds, from 1 ms to 7 days'],
      [{ key: "k", burst: 5 }, "options.rateLimit: takes key, limit and period (got `burst`)"],
    ] as const) {
      const res = await trigger({ rateLimit });
      expect(res.statusCode, JSON.stringify(rateLimit)).toBe(400);
      expect(res.json(), JSON.stringify(rateLimit)).toEqual({ error });
    }
    // Wrong types are the schema's to refuse, naming the field.
    for (const rateLimit of [{ limit: "10", period: "1s" }, { limit: 10, period: null }, { limit: 10, period: { ms: 5 } }]) {
      const res = await trigger({ rateLimit });
      expect(res.statusCode, JSON.stringify(rateLimit)).toBe(400);
      expect(res.json().error, JSON.stringify(rateLimit)).toMatch(/rateLimit\.(limit|period)/);
    }
  });

  it("refuses a key that is not a text of 1 to 512 characters or a number, and a rateLimit that is not an object, with 400", async () => {
    for (const rateLimit of [{ key: "" }, { key: "x".repeat(513) }, { key: { id: 1 } }, { key: null }, "customer-42", 10, null]) {
      const res = await trigger({ rateLimit });
      expect(res.statusCode, JSON.stringify(rateLimit)).toBe(400);
      expect(res.json().error, JSON.stringify(rateLimit)).toMatch(/rateLimit/);
    }
  });
});
