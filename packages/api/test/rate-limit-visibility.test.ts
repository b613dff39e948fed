// What the API shows of a rate limit (docs/rate-limits.md): the queues page's rate column with the
// runs waiting for their slot, and the database-wide gauge svc_queue_rate_limited{queue}. The
// queue is registered and its log written as a worker's claim would, with the API's clock.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiMetrics } from "../src/metrics/api-metrics.ts";
import { createUserWithPat } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";
import { sample } from "./prometheus-text.ts";

const clock = new FakeClock(new Date("2026-11-29T12:00:00Z"));
let api: TestApi;
let browser: DashboardBrowser;

beforeAll(async () => {
  api = await startTestApi({ clock, metrics: (te) => createApiMetrics({ pool: te.db.pool, clock, defaultMetrics: false }) });
  const user = await createUserWithPat(api, "rates@example.com", { memberOf: [api.project.projectRef] });
  browser = new DashboardBrowser(api.app);
  expect((await browser.signIn(user.pat)).statusCode).toBe(303);
  await api.db.pool.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version, rate_limit, rate_period_ms)
     VALUES ($1, 'send-sms', 'sms', 'v1', 2, 60000), ($1, 'plain-task', 'task/plain-task', 'v1', NULL, NULL)`,
    [api.env.id],
  );
});
afterAll(async () => api?.close());

async function trigger(task: string, key?: string) {
  const res = await api.app.inject({ method: "POST", url: `/api/v1/tasks/${task}/trigger`, headers: api.devAuth, payload: { payload: {}, options: key ? { rateLimit: { key } } : {} } });
  expect(res.statusCode).toBe(200);
}
async function scrape(): Promise<string> {
  return (await api.app.inject({ method: "GET", url: "/metrics" })).body;
}

describe("a rate-limited queue in the dashboard and the metrics", () => {
  it("shows the rate, and counts the ready runs over it per queue", async () => {
    for (let i = 0; i < 3; i++) await trigger("send-sms", "customer-1");
    await trigger("send-sms", "customer-2");
    await trigger("plain-task");
    // Nothing started yet: every key has its whole limit, but customer-1 has three runs for two slots.
    expect(sample(await scrape(), "svc_queue_rate_limited", { queue: "sms" })).toBe(1);
    let page = (await browser.get(`/dashboard/${api.project.projectRef}/dev/queues`)).body;
    expect(page).toContain('2 per 1 min<br><span class="rate-waiting">1 waiting for their slot</span>');

    // customer-1 started 2 runs a second ago: its third waits a minute; customer-2 has room.
    await api.db.pool.query(
      `INSERT INTO rate_limit_windows (environment_id, queue_name, rate_key, period_ms, started_at, started_n) VALUES ($1, 'sms', 'customer-1', 60000, ARRAY[$2::timestamptz], ARRAY[2])`,
      [api.env.id, new Date(clock.now().getTime() - 1000)],
    );
    expect(sample(await scrape(), "svc_queue_rate_limited", { queue: "sms" })).toBe(3);
    page = (await browser.get(`/dashboard/${api.project.projectRef}/dev/queues`)).body;
    expect(page).toContain('2 per 1 min<br><span class="rate-waiting">3 waiting for their slot</span>');
    expect(page).toMatch(/>task\/plain-task<\/a>.*?<span class="muted">none<\/span>/s);
    expect(sample(await scrape(), "svc_queue_rate_limited", { queue: "task/plain-task" })).toBeUndefined();

    // The task's page says its rate limit.
    const taskPage = (await browser.get(`/dashboard/${api.project.projectRef}/dev/tasks/send-sms`)).body;
    expect(taskPage).toContain("<dt>Rate limit</dt><dd>2 starts per 1 min</dd>");
    expect((await browser.get(`/dashboard/${api.project.projectRef}/dev/tasks/plain-task`)).body).toContain('<dt>Rate limit</dt><dd><span class="muted">none</span></dd>');

    // A minute after those starts, their slots are free again: two of customer-1's runs may start, the third waits for them.
    clock.advance(60_000);
    expect(sample(await scrape(), "svc_queue_rate_limited", { queue: "sms" })).toBe(1);
  });
});
