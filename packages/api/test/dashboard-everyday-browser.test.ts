// The dashboard's everyday loop in a real browser (Debian's chromium through playwright-core, CSP
// on): the Test form, replay with an edited payload, run id search, child runs, times in the
// viewer's zone (and UTC without JavaScript), and the environment switcher at 420 px.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, BrowserContextOptions, Page } from "playwright-core";
import { launchChromium } from "../../../test/browser/chromium.ts";
import type { ListeningApi } from "./client-server.ts";
import { startSignedInDashboard } from "./dashboard-session-helpers.ts";

let api: ListeningApi;
let browser: Browser;
let cookie: { name: string; value: string };
let base: string;
const contexts: BrowserContext[] = [];
/** Set SVC_SCREENSHOTS_DIR to keep a picture of each view this test opens. */
const SHOTS = process.env.SVC_SCREENSHOTS_DIR;

async function trigger(task: string, body: Record<string, unknown> = {}, auth = api.devAuth) {
  const res = await api.app.inject({ method: "POST", url: `/api/v1/tasks/${task}/trigger`, headers: auth, payload: body });
  expect(res.statusCode).toBe(200);
  return res.json().id as string;
}

async function retrieve(runId: string) {
  return (await api.app.inject({ method: "GET", url: `/api/v3/runs/${runId}`, headers: api.devAuth })).json();
}

/**
 * A signed-in page that records console errors (a CSP violation is one), page errors and dialogs;
 * `problems` must stay empty. The browser's own /favicon.ico request is not the page's, and the
 * 4xx of a page showing a form's problem is meant.
 */
async function openPage(options: BrowserContextOptions = {}): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext(options);
  contexts.push(context);
  await context.addCookies([{ ...cookie, url: api.baseURL }]);
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const problems: string[] = [];
  page.on("console", (message) => {
    const url = message.location().url;
    if (message.type() !== "error" || url.endsWith("/favicon.ico")) return;
    // A page answered with a 4xx on purpose (a form with its problem) is logged too: only assets must load.
    if (message.text().startsWith("Failed to load resource: the server responded with a status of 4") && !url.includes("/dashboard/assets/")) return;
    problems.push(`${message.text()} ${url}`);
  });
  page.on("pageerror", (error) => problems.push(String(error)));
  page.on("dialog", (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return { page, problems };
}

const shot = async (page: Page, name: string) => {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `everyday-${name}.png`), fullPage: true });
};

beforeAll(async () => {
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  const dashboard = await startSignedInDashboard();
  api = dashboard.api;
  cookie = { name: "svc_dashboard", value: dashboard.browser.cookies.get("svc_dashboard")! };
  base = `${api.baseURL}/dashboard/${api.project.projectRef}/dev`;
  for (const task of ["resize", "send-email"]) {
    await api.db.pool.query(`INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version) VALUES ($1, $2, $3, '1')`, [api.env.id, task, `task/${task}`]);
  }
  browser = await launchChromium();
});
afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await api?.close();
});

describe("the everyday dashboard in a browser", () => {
  it("tests a task from its Test form: bad JSON is shown on the form, good JSON starts a test run", async () => {
    await trigger("resize", { payload: { width: 100 } });
    const { page, problems } = await openPage();
    await page.goto(`${base}/tasks`);
    await page.locator('tr[data-task="resize"] a.button').click();
    await page.waitForURL(/\/tasks\/resize$/);
    const textarea = page.locator("textarea#test-payload");
    expect(JSON.parse(await textarea.inputValue())).toEqual({ width: 100 });
    await textarea.fill('{"width": 640,');
    await page.getByRole("button", { name: "Run test" }).click();
    await page.locator(".problem[role=alert]").waitFor();
    expect(await page.locator(".problem[role=alert]").textContent()).toContain("Payload: not valid JSON");
    expect(await textarea.inputValue()).toBe('{"width": 640,');
    await shot(page, "test-form-problem");
    await textarea.fill('{\n  "width": 640\n}');
    await page.getByRole("button", { name: "Run test" }).click();
    await page.waitForURL(/\/runs\/run_[0-9a-z]+\?notice=tested$/);
    expect(await page.locator(".notice").textContent()).toContain("Test run triggered");
    const runId = /runs\/(run_[0-9a-z]+)/.exec(page.url())![1]!;
    const run = await retrieve(runId);
    expect(run.payload).toEqual({ width: 640 });
    expect(run.isTest).toBe(true);
    expect(problems).toEqual([]);
  });

  it("replays a run with an edited payload after a confirmation", async () => {
    const runId = await trigger("send-email", { payload: { to: "a@example.com" } });
    const { page, problems } = await openPage();
    await page.goto(`${base}/runs/${runId}`);
    await page.getByRole("link", { name: "Replay…" }).click();
    await page.waitForURL(/\/replay$/);
    await page.locator("textarea#replay-payload").fill('{"to": "b@example.com"}');
    await page.getByRole("button", { name: "Review…" }).click();
    await page.getByRole("heading", { name: /^Replay run_[0-9a-z]+\?$/ }).waitFor();
    expect(await page.locator("pre.json").textContent()).toBe(JSON.stringify({ to: "b@example.com" }, null, 2));
    await shot(page, "replay-confirm");
    await page.getByRole("button", { name: "Replay run" }).click();
    await page.waitForURL(/notice=replayed$/);
    const newId = /runs\/(run_[0-9a-z]+)/.exec(page.url())![1]!;
    expect(newId).not.toBe(runId);
    expect((await retrieve(newId)).payload).toEqual({ to: "b@example.com" });
    expect(problems).toEqual([]);
  });

  it("jumps to a run by its whole id and lists runs by an id prefix", async () => {
    const a = await trigger("searched");
    const { page, problems } = await openPage();
    await page.goto(`${base}/runs`);
    await page.locator('input[name="q"]').fill(a);
    await page.getByRole("button", { name: "Apply" }).click();
    await page.waitForURL(`${base}/runs/${a}`);
    await page.goto(`${base}/runs`);
    await page.locator('input[name="q"]').fill(a.slice(0, 12));
    await page.getByRole("button", { name: "Apply" }).click();
    await page.waitForURL(/\/runs\?q=/);
    await page.locator(`#runs-table a:text-is("${a}")`).waitFor();
    // A text that cannot start a run id says so on the page.
    await page.locator('input[name="q"]').fill("not an id");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.locator(".problem[role=alert]").waitFor();
    expect(await page.locator(".problem[role=alert]").textContent()).toContain("is not a run id");
    expect(problems).toEqual([]);
  });

  it("marks child runs with their parent in the list and links to it", async () => {
    const parent = await trigger("parent-task");
    const child = await trigger("child-task", { options: { parentRunId: parent } });
    const { page, problems } = await openPage();
    await page.goto(`${base}/runs`);
    const row = page.locator(`tr.child[data-parent="${parent}"]`);
    await row.waitFor();
    expect(await row.locator("td").first().locator("a").first().textContent()).toBe(child);
    await row.locator(".child-of a").click();
    await page.waitForURL(`${base}/runs/${parent}`);
    await page.locator(`ul.children a:text-is("${child}")`).waitFor();
    expect(problems).toEqual([]);
  });

  it("shows times in the viewer's zone with JavaScript, and in UTC without", async () => {
    const runId = await trigger("timed");
    const created = new Date((await retrieve(runId)).createdAt);
    const pad = (n: number) => String(n).padStart(2, "0");
    const tokyo = new Date(created.getTime() + 9 * 3_600_000);
    const expected = `${tokyo.getUTCFullYear()}-${pad(tokyo.getUTCMonth() + 1)}-${pad(tokyo.getUTCDate())} ${pad(tokyo.getUTCHours())}:${pad(tokyo.getUTCMinutes())}:${pad(tokyo.getUTCSeconds())} GMT+9`;
    const utc = `${created.toISOString().slice(0, 19).replace("T", " ")} UTC`;

    const { page, problems } = await openPage({ timezoneId: "Asia/Tokyo" });
    await page.goto(`${base}/runs/${runId}`);
    const createdCell = page.locator("dl.facts time[data-local]").first();
    await page.locator("dl.facts time[data-local-zone]").first().waitFor();
    expect(await createdCell.textContent()).toBe(expected);
    expect(await createdCell.getAttribute("title")).toBe(utc);
    // Rows that the live list swaps in later are converted too.
    await page.goto(`${base}/runs`);
    const firstRow = page.locator("#runs-table tbody tr").first();
    await firstRow.locator("time[data-local-zone]").waitFor();
    const newer = await trigger("timed-later");
    await page.locator(`#runs-table a:text-is("${newer}")`).waitFor({ timeout: 10_000 });
    const newerTime = page.locator("#runs-table tbody tr", { has: page.locator(`a:text-is("${newer}")`) }).locator("time");
    await expect.poll(() => newerTime.textContent()).toMatch(/ GMT\+9$/);
    // The timeline's <time>s are offsets from the run's start: left as they are.
    expect(problems).toEqual([]);

    const noScript = await openPage({ timezoneId: "Asia/Tokyo", javaScriptEnabled: false });
    await noScript.page.goto(`${base}/runs/${runId}`);
    expect(await noScript.page.locator("dl.facts time[data-local]").first().textContent()).toBe(utc);
  });

  it("keeps the environment switcher visible and usable at 420 px", async () => {
    await trigger("narrow", { payload: { long: "x".repeat(300) }, options: { tags: ["a-rather-long-tag-name"] } });
    const { page, problems } = await openPage({ viewport: { width: 420, height: 800 }, isMobile: true, hasTouch: true });
    // preview's header also holds the branch picker.
    for (const view of ["runs", "tasks", "queues", "../preview/runs"]) {
      await page.goto(`${base}/${view}`);
      for (const slug of ["dev", "staging", "prod", "preview"]) {
        const link = page.locator("nav.envs a", { hasText: slug });
        expect(await link.isVisible(), `${view}: ${slug}`).toBe(true);
        const box = (await link.boundingBox())!;
        expect(box.x, `${view}: ${slug}`).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width, `${view}: ${slug}`).toBeLessThanOrEqual(420);
        expect(box.height, `${view}: ${slug} is big enough to tap`).toBeGreaterThanOrEqual(24);
      }
      // Nothing makes the page wider than the screen (wide tables scroll in their own box).
      expect(await page.evaluate<number>("document.documentElement.scrollWidth"), view).toBeLessThanOrEqual(420);
      await shot(page, `420-${view.replace("../preview/", "preview-")}`);
    }
    await page.locator("nav.envs a", { hasText: "prod" }).tap();
    await page.waitForURL(`${api.baseURL}/dashboard/${api.project.projectRef}/prod/runs`);
    expect(await page.locator('nav.envs a[aria-current="page"]').textContent()).toBe("prod");
    expect(problems).toEqual([]);
  });
});
