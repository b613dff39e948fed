import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streams, task } from "../packages/runtime/src/sdk/index.ts";
import { startTestWorker, type TestWorker } from "../packages/worker/test/harness.ts";
import { startListeningApi, type ListeningApi } from "../packages/api/test/client-server.ts";
import { launchChromium } from "./browser/chromium.ts";
import { servePage, type ServedPage } from "./browser/serve-page.ts";

// @trigger.dev/react-hooks' useRealtimeRunWithStreams in a real browser: a React page
// (test/browser/streams-page.tsx) on its own origin sends to the run's input stream with the
// trigger's public token (CORS preflight and all), and shows the chunks the run then pipes, live,
// while a real worker runs the run.
let api: ListeningApi;
let tw: TestWorker;
let served: ServedPage;
let browser: Browser;
/** The test lets each chunk through once the page showed the one before. */
const gates: (() => void)[] = [];
const gate = (n: number) => new Promise<void>((resolve) => (gates[n] = resolve));

const browserTask = task({
  id: "browser-streams",
  run: async () => {
    const go = await streams.input<{ from: string }>({ id: "go" }).wait({ timeout: "1h" });
    async function* tokens() {
      for (let i = 0; i < 3; i++) {
        await gate(i);
        yield { text: `token ${i}` };
      }
    }
    const { waitUntilComplete } = streams.pipe("tokens", tokens());
    await waitUntilComplete();
    return { from: go.unwrap().from };
  },
});

beforeAll(async () => {
  api = await startListeningApi();
  served = await servePage(new URL("./browser/streams-page.tsx", import.meta.url));
  tw = await startTestWorker(api, [browserTask]);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  for (const open of gates) open?.();
  await browser?.close();
  await tw?.stop();
  await api?.close();
  await served?.close();
});

describe("useRealtimeRunWithStreams in a browser", () => {
  it("sends to the run's input stream, then shows each chunk the run pipes as it comes, and the run completed", async () => {
    const res = await fetch(`${api.baseURL}/api/v1/tasks/browser-streams/trigger`, {
      method: "POST",
      headers: { ...api.devAuth, "content-type": "application/json" },
      body: JSON.stringify({ payload: {} }),
    });
    expect(res.status).toBe(200);
    const runId = ((await res.json()) as { id: string }).id;
    const token = res.headers.get("x-trigger-jwt")!;
    await tw.worker.events.next("runSuspended", (e) => e.runId === runId);

    const page: Page = await (await browser.newContext()).newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(String(error)));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    await page.goto(`${served.url}#${new URLSearchParams({ api: api.baseURL, run: runId, runToken: token })}`);
    await page.locator('#run[data-status="WAITING"]').waitFor({ state: "attached", timeout: 15_000 });
    await page.click("#go");
    await page.locator('body[data-sent="200"]').waitFor({ state: "attached", timeout: 15_000 });

    for (let i = 0; i < 3; i++) {
      await expect.poll(() => gates[i] !== undefined, { timeout: 15_000, interval: 20 }).toBe(true);
      gates[i]!();
      await page.locator(`#tokens[data-count="${i + 1}"]`).waitFor({ state: "attached", timeout: 15_000 });
    }
    expect(await page.locator("#tokens li").allTextContents()).toEqual(["token 0", "token 1", "token 2"]);
    await page.locator('#run[data-status="COMPLETED"]').waitFor({ state: "attached", timeout: 15_000 });
    expect(JSON.parse((await page.locator("#run-output").textContent())!)).toEqual({ from: "browser" });
    expect(await page.locator("#run").getAttribute("data-error")).toBe("");
    expect(problems).toEqual([]);
  });
});
