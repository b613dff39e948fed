// The dashboard's bulk actions: "Cancel all matching" / "Replay all matching" on the runs page,
// over the page's filters, and the action's page with its progress and abort.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processNextChunk } from "@svc/runtime/engine";
import { registerTasks } from "./registered-tasks.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { createUserWithPat } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";

let api: TestApi;
let browser: DashboardBrowser;
let base: string;
const csrfOf = (page: string) => DashboardBrowser.field(page, "_csrf");

async function trigger(task: string, tags: string[] = []): Promise<string> {
  const res = await api.app.inject({ method: "POST", url: `/api/v1/tasks/${task}/trigger`, headers: api.devAuth, payload: { payload: 1, options: { tags } } });
  expect(res.statusCode).toBe(200);
  return res.json().id as string;
}

async function statusOf(runId: string): Promise<string> {
  return (await api.app.inject({ method: "GET", url: `/api/v3/runs/${runId}`, headers: api.devAuth })).json().status;
}

beforeAll(async () => {
  api = await startTestApi();
  base = `/dashboard/${api.project.projectRef}/dev`;
  const user = await createUserWithPat(api, "bulk@example.com", { memberOf: [api.project.projectRef] });
  await registerTasks(api.db.pool, api.env.id, ["dash-bulk", "dash-other"]);
  browser = new DashboardBrowser(api.app);
  expect((await browser.signIn(user.pat)).statusCode).toBe(303);
});
afterAll(async () => api?.close());

describe("dashboard bulk actions", () => {
  it("cancels every run the page's filters match, and shows the action's progress", async () => {
    const matching = [await trigger("dash-bulk", ["red"]), await trigger("dash-bulk", ["red"])];
    const other = await trigger("dash-other", ["red"]);
    const unfiltered = await browser.get(`${base}/runs`);
    expect(unfiltered.body).not.toContain("Cancel all matching");
    const page = await browser.get(`${base}/runs?task=dash-bulk&tag=red`);
    expect(page.body).toContain("Cancel all matching");
    const posted = await browser.post(`${base}/runs/bulk`, { _csrf: csrfOf(page.body), action: "cancel", task: "dash-bulk", tag: "red" });
    expect(posted.statusCode).toBe(303);
    const href = String(posted.headers.location);
    expect(href).toMatch(/\/bulk-actions\/bulk_/);
    const pending = await browser.get(href);
    expect(pending.body).toContain("status-pending");
    expect(pending.body).toContain("0 of 2 handled");
    expect(pending.body).toContain("Abort");

    while (await processNextChunk(api.engine));
    const done = await browser.get(href);
    expect(done.body).toContain("status-completed");
    expect(done.body).toContain("2 of 2 handled");
    expect(done.body).not.toContain(">Abort<");
    expect(await Promise.all(matching.map(statusOf))).toEqual(["CANCELED", "CANCELED"]);
    expect(await statusOf(other)).toBe("QUEUED");
    // Its page links to the runs it reached: the runs page filtered by the action.
    const id = /bulk_[0-9a-z]+/.exec(href)![0];
    const link = /href="([^"]*\?bulk=[^"]+)"/.exec(done.body)?.[1];
    expect(link).toBe(`${base}/runs?bulk=${id}`.replace(/^https?:\/\/[^/]+/, ""));
    const touched = await browser.get(`${base}/runs?bulk=${id}`);
    expect(touched.statusCode).toBe(200);
    for (const runId of matching) expect(touched.body).toContain(runId);
    expect(touched.body).not.toContain(other);
  });

  it("aborts a pending action from its page, and refuses a bulk action without filters", async () => {
    await trigger("dash-bulk", ["green"]);
    const page = await browser.get(`${base}/runs?tag=green`);
    const posted = await browser.post(`${base}/runs/bulk`, { _csrf: csrfOf(page.body), action: "replay", tag: "green" });
    const href = String(posted.headers.location);
    const pending = await browser.get(href);
    const aborted = await browser.post(`${href}/abort`, { _csrf: csrfOf(pending.body) });
    expect(aborted.statusCode).toBe(303);
    expect((await browser.get(href)).body).toContain("status-aborted");
    expect(await processNextChunk(api.engine)).toBeNull();
    // Aborted already: a 409, as over the API.
    expect((await browser.post(`${href}/abort`, { _csrf: csrfOf(pending.body) })).statusCode).toBe(409);

    expect((await browser.post(`${base}/runs/bulk`, { _csrf: csrfOf(page.body), action: "cancel" })).statusCode).toBe(400);
    expect((await browser.post(`${base}/runs/bulk`, { _csrf: csrfOf(page.body), action: "delete", tag: "green" })).statusCode).toBe(400);
    expect((await browser.get(`${base}/bulk-actions/bulk_nosuchaction`)).statusCode).toBe(404);
  });
});
