// options.rateLimit on a trigger (svc's extension, docs/rate-limits.md): `{ key }` gives the run its
// rate key; a limit or a period is refused with 400 and why (they are the task's or queue's).
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

  it("refuses a limit or a period with 400 and where they belong", async () => {
    const res = await trigger({ rateLimit: { key: "k", limit: 10, period: "1s" } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error:
        "options.rateLimit: only `key` can be set when triggering (got `limit`, `period`); a rate limit's limit and period are declared on the task or its queue (task({ rateLimit }) or queue({ rateLimit }))",
    });
  });

  it("refuses a key that is not a text of 1 to 512 characters or a number, and a rateLimit that is not an object, with 400", async () => {
    for (const rateLimit of [{ key: "" }, { key: "x".repeat(513) }, { key: { id: 1 } }, { key: null }, "customer-42", 10, null]) {
      const res = await trigger({ rateLimit });
      expect(res.statusCode, JSON.stringify(rateLimit)).toBe(400);
      expect(res.json().error, JSON.stringify(rateLimit)).toMatch(/rateLimit/);
    }
  });
});
