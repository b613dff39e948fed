// One-time-use public tokens (`otu: true`, what createTriggerPublicToken mints by default): the
// first trigger or batch they create is recorded, any later one is a 422 — also under concurrency.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signJwt } from "./credentials-fixtures.ts";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
let envId: string;
let devKey: string;
beforeAll(async () => {
  api = await startTestApi();
  envId = api.project.environments.dev.id;
  devKey = api.project.environments.dev.secretKey;
});
afterAll(async () => api?.close());

/** A token of its own: two tokens with equal claims signed in the same second are the same string. */
function token(scopes: string[], oneTime: boolean) {
  return signJwt(devKey, { sub: envId, pub: true, scopes, jti: randomUUID(), ...(oneTime ? { otu: true } : {}) });
}
function trigger(jwt: string, taskId = "upload") {
  return api.app.inject({ method: "POST", url: `/api/v1/tasks/${taskId}/trigger`, headers: { authorization: `Bearer ${jwt}` }, payload: { payload: {} } });
}
async function runsOfTask(taskId: string): Promise<number> {
  const { rows } = await api.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE task_identifier = $1`, [taskId]);
  return rows[0]!.n;
}

describe("one-time-use public tokens", () => {
  it("trigger once; the second use is a 422 that names the task and creates nothing", async () => {
    const jwt = await token(["trigger:tasks:upload"], true);
    const first = await trigger(jwt);
    expect(first.statusCode).toBe(200);
    const second = await trigger(jwt);
    expect(second.statusCode).toBe(422);
    expect(second.json()).toEqual({ error: "Cannot trigger upload with a one-time use token as it has already been used." });
    expect(await runsOfTask("upload")).toBe(1);
    // Another one-time token is a new token.
    expect((await trigger(await token(["trigger:tasks:upload"], true))).statusCode).toBe(200);
  });

  it("lets exactly one of 10 concurrent triggers with one token through", async () => {
    const jwt = await token(["trigger:tasks:race"], true);
    const responses = await Promise.all(Array.from({ length: 10 }, () => trigger(jwt, "race")));
    expect(responses.map((r) => r.statusCode).sort()).toEqual([200, ...Array(9).fill(422)]);
    expect(await runsOfTask("race")).toBe(1);
  });

  it("lets a multiple-use token (no otu claim) and secret keys trigger again and again", async () => {
    const jwt = await token(["trigger:tasks:many"], false);
    for (let i = 0; i < 3; i++) expect((await trigger(jwt, "many")).statusCode).toBe(200);
    expect(await runsOfTask("many")).toBe(3);
  });

  it("a batch created by a one-time token (v2 or v3) cannot be created again with it; its items still arrive", async () => {
    const v2 = await token(["batchTrigger:tasks:resize"], true);
    const batch = (jwt: string) =>
      api.app.inject({ method: "POST", url: "/api/v2/tasks/batch", headers: { authorization: `Bearer ${jwt}` }, payload: { items: [{ task: "resize", payload: {} }] } });
    expect((await batch(v2)).statusCode).toBe(202);
    const again = await batch(v2);
    expect(again.statusCode).toBe(422);
    expect(again.json().error).toMatch(/one-time use token as it has already been used/);

    const v3 = await token(["batchTrigger:tasks:resize"], true);
    const headers = { authorization: `Bearer ${v3}` };
    const create = () => api.app.inject({ method: "POST", url: "/api/v3/batches", headers, payload: { runCount: 1, taskIdentifiers: ["resize"] } });
    const created = await create();
    expect(created.statusCode).toBe(202);
    expect((await create()).statusCode).toBe(422);
    const items = await api.app.inject({
      method: "POST",
      url: `/api/v3/batches/${created.json().id}/items`,
      headers: { ...headers, "content-type": "application/x-ndjson" },
      payload: `${JSON.stringify({ index: 0, task: "resize", payload: {} })}\n`,
    });
    expect(items.statusCode).toBe(200);
    expect(items.json()).toMatchObject({ sealed: true });
  });
});
