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

  it("lists the runs an action touched with filter[bulkAction], from any time, with other filters, over pages; and a filter of a later action", async () => {
    clock.set(new Date(T0.getTime() + 86_400_000));
    // One run from 10 days before: a cancel with a period reaches it, and the list shows it with no period.
    clock.advance(-10 * 86_400_000);
    const old = await triggerTask(api, { payload: {} }, "bulk-touched");
    clock.advance(10 * 86_400_000);
    const recent: string[] = [];
    for (let i = 0; i < 4; i++) {
      clock.advance(1000);
      recent.push(await triggerTask(api, { payload: {} }, "bulk-touched"));
    }
    await api.app.inject({ method: "POST", url: `/api/v2/runs/${recent[0]}/cancel`, headers: api.devAuth });
    clock.advance(1000);
    const cancel = await post("/api/v1/bulk-actions", { action: "cancel", filter: { taskIdentifier: "bulk-touched", period: "30d" } });
    const cancelId = cancel.json().id as string;
    const untouched = await triggerTask(api, { payload: {} }, "bulk-touched");
    await work();
    const list = async (query: Record<string, string>) => {
      const res = await api.app.inject({ method: "GET", url: `/api/v1/runs?${new URLSearchParams(query)}`, headers: api.devAuth });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as { data: { id: string; status: string }[]; pagination: { next?: string } };
    };
    // Every run of its set, the one already canceled too (a failure, but touched), newest first.
    const expected = [...recent].reverse().concat(old);
    expect((await list({ "filter[bulkAction]": cancelId })).data.map((r) => r.id)).toEqual(expected);
    const first = await list({ "filter[bulkAction]": cancelId, "page[size]": "2" });
    const second = await list({ "filter[bulkAction]": cancelId, "page[size]": "2", "page[after]": first.pagination.next! });
    const third = await list({ "filter[bulkAction]": cancelId, "page[size]": "2", "page[after]": second.pagination.next! });
    expect([...first.data, ...second.data, ...third.data].map((r) => r.id)).toEqual(expected);
    expect(third.pagination.next).toBeUndefined();
    // With a window, a task, a status: conditions on the action's runs.
    expect((await list({ "filter[bulkAction]": cancelId, "filter[createdAt][period]": "1d" })).data.map((r) => r.id)).toEqual([...recent].reverse());
    expect((await list({ "filter[bulkAction]": cancelId, "filter[taskIdentifier]": "other-task" })).data).toEqual([]);
    expect((await list({ "filter[bulkAction]": cancelId, "filter[status]": "QUEUED" })).data).toEqual([]);
    expect((await list({ "filter[bulkAction]": cancelId })).data.map((r) => r.id)).not.toContain(untouched);
    // Two actions: either's runs, each once.
    clock.advance(1000);
    const replay = await post("/api/v1/bulk-actions", { action: "replay", filter: { bulkAction: cancelId, tag: [] as never } });
    expect(replay.statusCode).toBe(400);
    const replayOk = await post("/api/v1/bulk-actions", { action: "replay", filter: { bulkAction: cancelId } });
    expect(replayOk.statusCode, replayOk.body).toBe(200);
    await work();
    const replayed = (await list({ "filter[bulkAction]": replayOk.json().id })).data;
    expect(replayed).toHaveLength(expected.length);
    expect(replayed.map((r) => r.id)).not.toContain(old);
    const both = (await list({ "filter[bulkAction]": `${cancelId},${replayOk.json().id}`, "page[size]": "100" })).data.map((r) => r.id);
    expect(new Set(both).size).toBe(both.length);
    expect(both.sort()).toEqual([...expected, ...replayed.map((r) => r.id)].sort());
    // Refused: a value that is no bulk action id; an unknown one matches nothing.
    const bad = await api.app.inject({ method: "GET", url: "/api/v1/runs?filter[bulkAction]=run_abc", headers: api.devAuth });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/filter\[bulkAction\]/);
    expect((await list({ "filter[bulkAction]": "bulk_nosuchaction" })).data).toEqual([]);
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
      [{ action: "cancel", filter: { bulkAction: "not a bulk id" } }, /filter\.bulkAction/],
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
