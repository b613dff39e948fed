import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { syncDeclarativeSchedules } from "@svc/runtime/engine";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { bearer, createOtherProject, createUserWithPat } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";
import { registerTask, scheduleClient } from "./schedules-helpers.ts";

let api: TestApi;
let ref: string;
let pat: string;
let dev: ReturnType<typeof scheduleClient>;
let berlin: { id: string };
let declarativeId: string;
let otherScheduleId: string;
const clock = new FakeClock(new Date("2025-06-01T08:00:00Z"));
const EVIL_EXTERNAL_ID = "<script>alert(1)</script>";
const EVIL_KEY = '"><img src=x onerror=alert(1)>';

beforeAll(async () => {
  api = await startTestApi({ clock });
  ref = api.project.projectRef;
  pat = (await createUserWithPat(api, "member@example.com", { memberOf: [ref] })).pat;
  dev = scheduleClient(api);
  const envId = api.project.environments.dev.id;
  await registerTask(api, envId, "nightly");
  berlin = (await dev.create({ task: "nightly", cron: "30 2 * * *", timezone: "Europe/Berlin", externalId: EVIL_EXTERNAL_ID, deduplicationKey: EVIL_KEY })).json();
  const [declarative] = (await syncDeclarativeSchedules(api.db.pool, envId, [{ id: "digest", cron: "0 7 * * *" }], clock.now())).schedules;
  declarativeId = declarative!.id;
  const other = await createOtherProject(api);
  await registerTask(api, other.environments.dev.id, "nightly");
  otherScheduleId = (await scheduleClient(api, bearer(other.environments.dev.secretKey)).create({ task: "nightly", cron: "0 * * * *" })).json().id;
});
afterAll(async () => api?.close());

async function signedIn() {
  const browser = new DashboardBrowser(api.app);
  expect((await browser.signIn(pat)).statusCode).toBe(303);
  return browser;
}

const page = (query = "") => `/dashboard/${ref}/dev/schedules${query}`;
const action = (id: string, verb: "activate" | "deactivate") => `/dashboard/${ref}/dev/schedules/${encodeURIComponent(id)}/${verb}`;
const isActive = async (id: string) => (await dev.retrieve(id)).json().active as boolean;

describe("dashboard schedules page", () => {
  it("lists each schedule with its cron, description, timezone, keys, state, next runs and kind", async () => {
    const browser = await signedIn();
    const res = await browser.get(page());
    expect(res.statusCode).toBe(200);
    const body = res.body;
    expect(body).toContain(berlin.id);
    expect(body).toContain("<code>30 2 * * *</code>");
    expect(body).toContain("At 02:30 AM");
    expect(body).toContain("Europe/Berlin");
    // Next tick in UTC, with the schedule's own local time beside it, then the later ticks.
    expect(body).toContain("2025-06-02 00:30:00 UTC");
    expect(body).toContain("(2025-06-02 02:30 Europe/Berlin)");
    expect(body).toContain("2025-06-03 00:30:00 UTC");
    expect(body).toContain("At 07:00 AM");
    expect(body).toContain("declarative");
    expect(body).toContain("imperative");
    expect(body).toContain(`href="/dashboard/${ref}/dev/runs?schedule=${berlin.id}"`);
    expect(body).toContain(`href="/dashboard/${ref}/dev/runs?schedule=${declarativeId}"`);
    // Only the imperative schedule has an activation form.
    expect(body).toContain(`action="${action(berlin.id, "deactivate")}"`);
    expect(body).not.toContain(`${declarativeId}/deactivate`);
    expect(body).toContain("Page 1 of 1 · 2 schedules");
    // The other project's schedule is not listed.
    expect(body).not.toContain(otherScheduleId);
  });

  it("shows a stored external id and deduplication key as text", async () => {
    const body = (await (await signedIn()).get(page())).body;
    expect(body).not.toContain("<script>alert");
    expect(body).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(body).not.toContain("<img src=x");
    expect(body).toContain("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;");
  });

  it("pages the list the way the API does (page, perPage)", async () => {
    const browser = await signedIn();
    const first = await browser.get(page("?perPage=1"));
    expect(first.body).toContain("Page 1 of 2 · 2 schedules");
    expect(first.body).toContain(`href="/dashboard/${ref}/dev/schedules?page=2&amp;perPage=1"`);
    const second = await browser.get(page("?page=2&perPage=1"));
    expect(second.body).toContain("Page 2 of 2");
    // One schedule per page, each on exactly one, in the API's order.
    const listed = (await dev.list("?perPage=1")).json().data[0].id as string;
    const [onFirst, onSecond] = listed === berlin.id ? [berlin.id, declarativeId] : [declarativeId, berlin.id];
    expect(first.body).toContain(`>${onFirst}<`);
    expect(first.body).not.toContain(`>${onSecond}<`);
    expect(second.body).toContain(`>${onSecond}<`);
    expect(second.body).not.toContain(`>${onFirst}<`);
    expect((await browser.get(page("?page=9"))).body).toContain("No schedules on this page.");
  });

  it("deactivates and activates an imperative schedule, post/redirect/get back to the list", async () => {
    const browser = await signedIn();
    const csrf = DashboardBrowser.field((await browser.get(page())).body, "_csrf");
    const off = await browser.post(`${action(berlin.id, "deactivate")}?page=1&perPage=5`, { _csrf: csrf });
    expect(off.statusCode).toBe(303);
    expect(off.headers.location).toBe(`/dashboard/${ref}/dev/schedules?perPage=5&notice=deactivated`);
    expect(await isActive(berlin.id)).toBe(false);
    const list = await browser.get(String(off.headers.location));
    expect(list.body).toContain("The schedule is inactive");
    expect(list.body).toContain("none while inactive");
    expect(list.body).toContain(`action="${action(berlin.id, "activate")}?perPage=5"`);

    clock.advance(2 * 86_400_000);
    const on = await browser.post(action(berlin.id, "activate"), { _csrf: csrf });
    expect(on.headers.location).toBe(`/dashboard/${ref}/dev/schedules?notice=activated`);
    // Re-activated from now: the ticks missed while inactive are skipped.
    expect((await dev.retrieve(berlin.id)).json()).toMatchObject({ active: true, nextRun: "2025-06-04T00:30:00.000Z" });
    // By deduplication key too, as the API's {id} allows.
    expect((await browser.post(action(EVIL_KEY, "deactivate"), { _csrf: csrf })).statusCode).toBe(303);
    expect(await isActive(berlin.id)).toBe(false);
    expect((await browser.post(action(berlin.id, "activate"), { _csrf: csrf })).statusCode).toBe(303);
  });

  it("changes nothing for a forged or missing CSRF token", async () => {
    const browser = await signedIn();
    expect((await browser.post(action(berlin.id, "deactivate"), { _csrf: "forged" })).statusCode).toBe(403);
    expect((await browser.post(action(berlin.id, "deactivate"), {})).statusCode).toBe(403);
    expect(await isActive(berlin.id)).toBe(true);
  });

  it("refuses a declarative schedule as the API does, on the list with the API's message", async () => {
    const browser = await signedIn();
    const csrf = DashboardBrowser.field((await browser.get(page())).body, "_csrf");
    const res = await browser.post(action(declarativeId, "deactivate"), { _csrf: csrf });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain(`Cannot deactivate a declarative schedule (${declarativeId})`);
    expect(res.body).toContain("schedules.task(&quot;digest&quot;)");
    expect(res.body).toContain("<h1>Schedules</h1>");
    expect(await isActive(declarativeId)).toBe(true);
    const api422 = await dev.deactivate(declarativeId);
    expect(api422.statusCode).toBe(422);
  });

  it("answers another project's schedule, an unknown id or a bad one with a 4xx page, never a 500", async () => {
    const browser = await signedIn();
    const csrf = DashboardBrowser.field((await browser.get(page())).body, "_csrf");
    const other = await browser.post(action(otherScheduleId, "deactivate"), { _csrf: csrf });
    expect(other.statusCode).toBe(404);
    expect(other.body).toContain("Schedule not found");
    expect((await scheduleClient(api, bearer(api.project.environments.dev.secretKey)).retrieve(otherScheduleId)).statusCode).toBe(404);
    expect((await browser.post(action("sched_nope", "activate"), { _csrf: csrf })).statusCode).toBe(404);
    for (const bad of ["%00", "x".repeat(300), "%ED%A0%80"]) {
      const res = await browser.post(`/dashboard/${ref}/dev/schedules/${bad}/activate`, { _csrf: csrf });
      expect(res.statusCode, bad).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, bad).toBeLessThan(500);
    }
    for (const query of ["?page=0", "?page=abc", "?perPage=-1", "?page=1e99"]) {
      const res = await browser.get(page(query));
      expect(res.statusCode, query).toBe(400);
      expect(res.headers["content-type"]).toMatch(/text\/html/);
    }
    // Another project, or a project the user is not a member of, is not found.
    expect((await browser.get(`/dashboard/nope/dev/schedules`)).statusCode).toBe(404);
  });
});
