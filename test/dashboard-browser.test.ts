import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../packages/runtime/src/testing/database.ts";
import { launchChromium } from "./browser/chromium.ts";
import { startSvcDev, until, type SvcDev } from "./browser/svc-dev.ts";

// The newcomer's path in a real browser: `pnpm start` (svc dev with examples/hello), a PAT from
// `svc access`, sign in, watch the example `approval` run wait, complete its token, see it finish.
// Screenshots of every view go to SVC_SCREENSHOTS_DIR (default .screenshots/dashboard).
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const SHOTS = process.env.SVC_SCREENSHOTS_DIR || join(ROOT, ".screenshots/dashboard");

let db: TestDatabase;
let state: string;
let svc: SvcDev;
let browser: Browser;
let page: Page;
let pat: string;

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(`${svc.url}${path}`, { method, headers: { authorization: `Bearer ${svc.devKey}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return res.json() as Promise<any>;
}

/** Waits until an element of `locator` contains `text` (the page may still be loading or refreshing). */
const sees = (locator: ReturnType<Page["locator"]>, text: string) => locator.filter({ hasText: text }).first().waitFor();

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  db = await createTestDatabase({ empty: true });
  state = mkdtempSync(join(tmpdir(), "svc-dashboard-"));
  svc = await startSvcDev(db.url, state);
  const access = await svc.cli(["access", "newcomer@example.com", "--json"]);
  expect(access.code, access.stderr).toBe(0);
  pat = JSON.parse(access.stdout).token;
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1360, height: 900 } })).newPage();
  page.setDefaultTimeout(15_000);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  await db?.drop();
  if (state) rmSync(state, { recursive: true, force: true });
});

describe("the dashboard in a browser", () => {
  it("signs in with a PAT from the CLI, watches the approval run wait and finish, cancels a run, signs out", async () => {
    // Signed out: the dashboard sends the browser to the sign-in form.
    await page.goto(`${svc.url}/dashboard`);
    expect(new URL(page.url()).pathname).toBe("/dashboard/login");
    await shot("01-sign-in");
    await page.fill('input[name="token"]', pat);
    await page.click('button[type="submit"]');
    await page.waitForURL(/\/dashboard\/[^/]+\/dev\/runs/);
    await shot("02-runs-empty");

    // A run started elsewhere appears in the open list (it refreshes itself) and waits on its token.
    const { id: runId } = await api("POST", "/api/v1/tasks/approval/trigger", { payload: { amount: 42 } });
    const row = page.locator("#runs-table tr", { hasText: runId });
    await row.locator(".status-waiting").waitFor();
    await shot("03-runs-waiting");

    // Its page: facts, payload, and the timeline with the wait that suspended it.
    await row.locator(`a[href*="/runs/${runId}"]`).click();
    await page.waitForURL(new RegExp(`/runs/${runId}`));
    await sees(page.locator(".tl-table"), "ask-for-approval");
    await sees(page.locator(".tl-kind-wait"), "suspended the run");
    await sees(page.locator("pre.json").first(), '"amount": 42');
    await shot("04-run-waiting-timeline");

    // What it printed inside its step: a console line, under the step, which the level filter hides.
    const printed = "approve 42? complete token";
    const logRows = page.locator(".tl-kind-log", { hasText: printed });
    // Written just after the run suspended: the page shows it once it is.
    await until(async () => (await page.reload(), (await logRows.count()) > 0), svc.output);
    expect(await page.locator(".tl-kind-log.tl-depth-2", { hasText: printed }).count()).toBe(1);
    await shot("04b-run-logs");
    await page.selectOption('select[name="logLevel"]', "warn");
    await page.click('button:has-text("Filter logs")');
    await page.waitForURL(/logLevel=warn/);
    await sees(page.locator(".tl-log-filter"), "0 of 1 lines");
    expect(await logRows.count()).toBe(0);
    await page.click('.tl-log-filter a:has-text("Clear")');
    await logRows.first().waitFor();

    // The token it waits on: complete it with JSON, confirm, and the run finishes.
    await page.locator(".tl-waiting-on a.tl-token-link").first().click();
    await page.waitForURL(/\/tokens\/waitpoint_/);
    await sees(page.locator("body"), runId);
    await shot("05-token");
    await page.fill('textarea[name="output"]', '{ "approved": true }');
    await page.click('button:has-text("Review")');
    await sees(page.locator("h1"), "Complete");
    await shot("06-token-confirm");
    await page.click('button:has-text("Complete token")');
    await sees(page.locator(".notice"), "Token completed");
    await until(async () => (await api("GET", `/api/v3/runs/${runId}`)).status === "COMPLETED", svc.output);
    await page.goto(`${svc.url}${new URL(page.url()).pathname.replace(/tokens\/.*/, `runs/${runId}`)}`);
    await sees(page.locator("h1 .badge"), "COMPLETED");
    await sees(page.locator("body"), '"status": "approved"');
    await shot("07-run-completed");

    // Cancel another waiting run from its page.
    const { id: other } = await api("POST", "/api/v1/tasks/approval/trigger", { payload: { amount: 7 } });
    await until(async () => (await api("GET", `/api/v3/runs/${other}`)).status === "WAITING", svc.output);
    await page.goto(`${svc.url}${new URL(page.url()).pathname.replace(/runs\/.*/, `runs/${other}`)}`);
    await page.click('button:has-text("Cancel run")');
    await sees(page.locator("h1 .badge"), "CANCELED");
    expect((await api("GET", `/api/v3/runs/${other}`)).status).toBe("CANCELED");
    await shot("08-run-canceled");

    // Every other view renders.
    const base = new URL(page.url()).pathname.replace(/\/runs\/.*/, "");
    for (const [view, name] of [["tokens", "09-tokens"], ["queues", "10-queues"], ["schedules", "11-schedules"], ["envvars", "12-envvars"], ["sessions", "13-sessions"]] as const) {
      const res = await page.goto(`${svc.url}${base}/${view}`);
      expect(res?.status(), view).toBe(200);
      await shot(name);
    }
    expect(await page.locator("body").innerText()).not.toContain("Internal");

    // The tasks page lists what the worker registered; its Test form runs hello-world with a typed payload.
    await page.goto(`${svc.url}${base}/tasks`);
    const hello = page.locator('tr[data-task="hello-world"]');
    await sees(hello, "yes");
    await shot("15-tasks");
    await hello.locator("a.button").click();
    await page.fill("textarea#test-payload", '{ "name": "dashboard" }');
    await page.click('button:has-text("Run test")');
    await page.waitForURL(/\/runs\/run_[0-9a-z]+\?notice=tested/);
    const testRunId = /runs\/(run_[0-9a-z]+)/.exec(page.url())![1]!;
    await until(async () => (await api("GET", `/api/v3/runs/${testRunId}`)).status === "COMPLETED", svc.output);
    await page.reload();
    await sees(page.locator("body"), "Hello, dashboard!");
    await shot("16-test-run");

    // A forged CSRF token is refused, and nothing happens.
    const { id: third } = await api("POST", "/api/v1/tasks/approval/trigger", { payload: { amount: 1 } });
    await until(async () => (await api("GET", `/api/v3/runs/${third}`)).status === "WAITING", svc.output);
    await page.goto(`${svc.url}${base}/runs/${third}`);
    await page.locator('form[action$="/cancel"] input[name="_csrf"]').evaluate((input) => input.setAttribute("value", "forged"));
    await page.click('button:has-text("Cancel run")');
    await sees(page.locator("h1"), "Refused");
    expect((await api("GET", `/api/v3/runs/${third}`)).status).toBe("WAITING");

    // Sign out: every page is the sign-in form again.
    await page.goto(`${svc.url}${base}/runs`);
    await page.click('button:has-text("Sign out")');
    await page.waitForURL(/\/dashboard\/login/);
    await page.goto(`${svc.url}${base}/runs/${runId}`);
    expect(new URL(page.url()).pathname).toBe("/dashboard/login");
    await shot("14-signed-out");
  }, 180_000);
});
