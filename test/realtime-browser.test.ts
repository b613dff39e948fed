import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { task } from "../packages/runtime/src/sdk/index.ts";
import { mintPublicToken } from "../packages/api/src/auth/public-tokens.ts";
import { startTestWorker, type TestWorker } from "../packages/worker/test/harness.ts";
import { startListeningApi, type ListeningApi } from "../packages/api/test/client-server.ts";
import { launchChromium } from "./browser/chromium.ts";
import { servePage, type ServedPage } from "./browser/serve-page.ts";

// @trigger.dev/react-hooks in a real browser: a React page (test/browser/realtime-page.tsx, bundled
// here with esbuild) served from its own origin, subscribed to svc's API on another (CORS and the
// electric-* headers exposed to scripts), while a real worker runs the run it shows.
let api: ListeningApi;
let tw: TestWorker;
let served: ServedPage;
let browser: Browser;
let release!: () => void;
const finish = new Promise<void>((resolve) => (release = resolve));

const browserTask = task({
  id: "browser-realtime",
  run: async (payload: { n: number }) => {
    await finish;
    return { squared: payload.n * payload.n };
  },
});

async function trigger(payload: unknown, tags: string[]): Promise<{ id: string; token: string }> {
  const res = await fetch(`${api.baseURL}/api/v1/tasks/browser-realtime/trigger`, {
    method: "POST",
    headers: { ...api.devAuth, "content-type": "application/json" },
    body: JSON.stringify({ payload, options: { tags } }),
  });
  expect(res.status).toBe(200);
  return { id: ((await res.json()) as { id: string }).id, token: res.headers.get("x-trigger-jwt")! };
}

beforeAll(async () => {
  api = await startListeningApi();
  served = await servePage(new URL("./browser/realtime-page.tsx", import.meta.url));
  tw = await startTestWorker(api, [browserTask]);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  release();
  await browser?.close();
  await tw?.stop();
  await api?.close();
  await served?.close();
});

describe("useRealtimeRun and useRealtimeRunsWithTag in a browser", () => {
  it("show the run executing, then completed with its output, and a new run with the tag as it is triggered", async () => {
    const tag = "browser-user:1";
    const first = await trigger({ n: 7 }, [tag]);
    const tagToken = await mintPublicToken(api.deps, api.env, [`read:tags:${tag}`]);
    const page: Page = await (await browser.newContext()).newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(String(error)));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    const hash = new URLSearchParams({ api: api.baseURL, run: first.id, runToken: first.token, tag, tagToken });
    await page.goto(`${served.url}#${hash}`);

    await page.locator('#run[data-status="EXECUTING"]').waitFor({ state: "attached", timeout: 15_000 });
    await page.locator(`#tagged li[data-id="${first.id}"]`).waitFor({ state: "attached" });
    release();
    await page.locator('#run[data-status="COMPLETED"]').waitFor({ state: "attached", timeout: 15_000 });
    expect(JSON.parse((await page.locator("#run-output").textContent())!)).toEqual({ squared: 49 });

    const second = await trigger({ n: 3 }, [tag, "other"]);
    await trigger({ n: 4 }, ["browser-user:2"]);
    await page.locator(`#tagged li[data-id="${second.id}"][data-status="COMPLETED"]`).waitFor({ state: "attached", timeout: 15_000 });
    expect(await page.locator("#tagged li").count()).toBe(2);
    expect(await page.locator("#run").getAttribute("data-error")).toBe("");
    expect(problems).toEqual([]);
  });
});
