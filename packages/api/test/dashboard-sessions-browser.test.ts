import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { launchChromium } from "../../../test/browser/chromium.ts";
import type { ListeningApi } from "./client-server.ts";
import { startSignedInDashboard } from "./dashboard-session-helpers.ts";
import { append, createSessionOk } from "./sessions-helpers.ts";

describe("session page in a real browser (CSP on, script from the dashboard's assets)", () => {
  let api: ListeningApi;
  let browser: Browser;
  let cookie: { name: string; value: string };

  beforeAll(async () => {
    const dashboard = await startSignedInDashboard();
    api = dashboard.api;
    cookie = { name: "svc_dashboard", value: dashboard.browser.cookies.get("svc_dashboard")! };
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  it("appends records to the tables as they are appended, as text, with no CSP violation", async () => {
    const s = await createSessionOk(api, { externalId: "in-browser" });
    await append(api, s.id, "in", `{"text":"first"}`);
    const context = await browser.newContext();
    await context.addCookies([{ ...cookie, url: api.baseURL }]);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("console", (message) => {
      // The browser's own /favicon.ico request is not the page's (the API has none: a 404).
      if (message.type() === "error" && !message.location().url.endsWith("/favicon.ico")) problems.push(`${message.text()} ${message.location().url}`);
    });
    page.on("pageerror", (error) => problems.push(String(error)));
    page.on("dialog", (dialog) => {
      problems.push(`dialog: ${dialog.message()}`);
      void dialog.dismiss();
    });
    await page.goto(`${api.baseURL}/dashboard/${api.project.projectRef}/dev/sessions/in-browser`);
    await page.locator("[data-records-status].live").waitFor();

    await append(api, s.id, "in", "<img src=x onerror=alert(1)>");
    await append(api, s.id, "out", JSON.stringify({ reply: "<script>alert(2)</script>" }));
    const inRow = page.locator('tbody[data-records-io="in"] tr[data-seq="2"]');
    await inRow.waitFor();
    expect(await inRow.locator("pre").textContent()).toBe("<img src=x onerror=alert(1)>");
    expect(await inRow.locator("img").count()).toBe(0);
    const outRow = page.locator('tbody[data-records-io="out"] tr[data-seq="1"]');
    await outRow.waitFor();
    expect(await outRow.locator("pre").textContent()).toBe(JSON.stringify({ reply: "<script>alert(2)</script>" }, null, 2));
    expect(await page.locator('tbody[data-records-io="out"] tr.empty').count()).toBe(0);
    expect(await page.locator('[data-records-last="in"]').textContent()).toBe("2");
    expect(await page.locator('tbody[data-records-io="in"] tr').count()).toBe(2);
    expect(problems).toEqual([]);
    await context.close();
  });
});
