// POST/GET /api/v1/bulk-actions over HTTP: what a filter selects (the run list's rules, its set
// fixed at creation), and every kind of bad request a clear 4xx.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, processNextChunk } from "@svc/runtime/engine";
import { startTestApi, type TestApi } from "./harness.ts";
import { triggerTask } from "./runs-fixtures.ts";

const T0 = new Date("2031-03-04T05:06:07.000Z");
const clock = new FakeClock(T0);
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ clock });
});
afterAll(async () => api?.close());

function post(url: string, payload?: unknown, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
}

async function work(): Promise<void> {
  while (await processNextChunk(api.engine, { chunkSize: 3 }));
}

describe("bulk actions over HTTP", () => {
  it("selects by the run list's filters, as of its creation, 7 days back unless told", async () => {
    clock.set(new Date(T0.getTime() - 8 * 86_400_000));
    const old = await triggerTask(api, { payload: {} }, "bulk-http");
    clock.set(T0);
    const recent = [await triggerTask(api, { payload: {}, options: { tags: ["keep"] } }, "bulk-http"), await triggerTask(api, { payload: {} }, "bulk-http")];
    clock.advance(1000);
    const res = await post("/api/v1/bulk-actions", { action: "cancel", filter: { taskIdentifier: "bulk-http" } });
    expect(res.statusCode, res.body).toBe(200);
    const id = res.json().id as string;
    // Triggered after the action: not in its set.
    const later = await triggerTask(api, { payload: {} }, "bulk-http");
    await work();
    const got = await api.app.inject({ method: "GET", url: `/api/v1/bulk-actions/${id}`, headers: api.devAuth });
    expect(got.json()).toMatchObject({ id, type: "CANCEL", status: "COMPLETED", counts: { total: 2, success: 2, failure: 0 } });
    const status = async (runId: string) => (await api.app.inject({ method: "GET", url: `/api/v3/runs/${runId}`, headers: api.devAuth })).json().status;
    expect(await Promise.all(recent.map(status))).toEqual(["CANCELED", "CANCELED"]);
    expect(await status(old)).not.toBe("CANCELED");
    expect(await status(later)).not.toBe("CANCELED");

    // A period reaches the old one; a queue by the SDK's { type, name } too.
    clock.advance(1000);
    const wide = await post("/api/v1/bulk-actions", { action: "cancel", filter: { queue: { type: "task", name: "bulk-http" }, period: "30d" } });
    expect(wide.statusCode, wide.body).toBe(200);
    await work();
    const done = await api.app.inject({ method: "GET", url: `/api/v1/bulk-actions/${wide.json().id}`, headers: api.devAuth });
    // The two canceled above are already finished (failed); the old one and the later one are canceled.
    expect(done.json().counts).toEqual({ total: 4, success: 2, failure: 2 });
  });

  it("refuses bad requests with a 4xx that says why", async () => {
    const cases: [unknown, RegExp][] = [
      [{ action: "delete", filter: { taskIdentifier: "x" } }, /action/],
      [{ filter: { taskIdentifier: "x" } }, /action/],
      [{ action: "cancel" }, /Exactly one of filter or runIds/],
      [{ action: "cancel", filter: { taskIdentifier: "x" }, runIds: ["run_a"] }, /Exactly one of filter or runIds/],
      [{ action: "cancel", filter: {} }, /At least one filter/],
      [{ action: "cancel", filter: { tag: [] } }, /filter\.tag/],
      [{ action: "cancel", filter: { status: ["QUEUED", "SLEEPING"] } }, /filter\.status/],
      [{ action: "cancel", filter: { period: "soon" } }, /filter\.period/],
      [{ action: "cancel", filter: { from: "yesterday" } }, /filter\.from/],
      [{ action: "cancel", filter: { machine: "small-1x" } }, /machine/],
      [{ action: "cancel", filter: { bulkAction: "bulk_x" } }, /bulkAction/],
      [{ action: "cancel", runIds: [] }, /runIds/],
      [{ action: "cancel", runIds: ["run_\u0000"] }, /NUL/],
      [{ action: "replay", runIds: ["run_a"], name: "x".repeat(256) }, /name/],
      [[1, 2], /object/],
    ];
    for (const [body, message] of cases) {
      const res = await post("/api/v1/bulk-actions", body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error, JSON.stringify(body)).toMatch(message);
    }
    const unknown = await api.app.inject({ method: "GET", url: "/api/v1/bulk-actions/bulk_nosuchaction", headers: api.devAuth });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: "Bulk action not found" });
    expect((await post("/api/v1/bulk-actions/bulk_nosuchaction/abort")).statusCode).toBe(404);
    const badPage = await api.app.inject({ method: "GET", url: "/api/v1/bulk-actions?page[after]=nonsense", headers: api.devAuth });
    expect(badPage.statusCode).toBe(400);
    // No credentials, or another environment's key: the action is not there.
    expect((await api.app.inject({ method: "GET", url: "/api/v1/bulk-actions" })).statusCode).toBe(401);
    const created = await post("/api/v1/bulk-actions", { action: "replay", runIds: ["run_nosuchrun"], targetRegion: "anywhere" });
    expect(created.statusCode, created.body).toBe(200);
    const prod = { authorization: `Bearer ${api.project.environments.prod.secretKey}` };
    expect((await api.app.inject({ method: "GET", url: `/api/v1/bulk-actions/${created.json().id}`, headers: prod })).statusCode).toBe(404);
    // Finished: a second abort is a conflict.
    await work();
    const again = await post(`/api/v1/bulk-actions/${created.json().id}/abort`);
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toMatch(/already COMPLETED/);
  });
});
