import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendRunLogs, DEFAULT_RUN_LOG_LIMITS, registerQueues } from "@svc/runtime/engine";
import { registerTasks } from "./registered-tasks.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { createPreviewBranch, createUserWithPat } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";

let api: TestApi;
let browser: DashboardBrowser;
let base: string;

async function trigger(task: string, body: Record<string, unknown> = {}) {
  const res = await api.app.inject({ method: "POST", url: `/api/v1/tasks/${task}/trigger`, headers: api.devAuth, payload: { payload: 1, ...body } });
  expect(res.statusCode).toBe(200);
  return res.json().id as string;
}

async function createToken(body: Record<string, unknown> = {}) {
  const res = await api.app.inject({ method: "POST", url: "/api/v1/waitpoints/tokens", headers: api.devAuth, payload: body });
  return res.json().id as string;
}

const csrfOf = (page: string) => DashboardBrowser.field(page, "_csrf");

beforeAll(async () => {
  api = await startTestApi();
  base = `/dashboard/${api.project.projectRef}/dev`;
  const user = await createUserWithPat(api, "pages@example.com", { memberOf: [api.project.projectRef] });
  // Registered, as a worker would: their queued runs read QUEUED (a never-registered task's read PENDING_VERSION).
  await registerTasks(api.db.pool, api.env.id, ["alpha", "beta", "paged", "queue-a", "logging"]);
  browser = new DashboardBrowser(api.app);
  expect((await browser.signIn(user.pat)).statusCode).toBe(303);
});
afterAll(async () => api?.close());

describe("runs list", () => {
  it("lists runs with the API's filters and cursor pages, and answers htmx refreshes with the table alone", async () => {
    const tagged = await trigger("alpha", { options: { tags: ["blue"] } });
    const other = await trigger("beta");
    const all = await browser.get(`${base}/runs`);
    expect(all.statusCode).toBe(200);
    expect(all.headers["server-timing"]).toMatch(/^app;dur=\d/);
    expect(all.body).toContain(tagged);
    expect(all.body).toContain(other);
    const byTag = await browser.get(`${base}/runs?tag=blue`);
    expect(byTag.body).toContain(tagged);
    expect(byTag.body).not.toContain(other);
    const byTask = await browser.get(`${base}/runs?task=beta`);
    expect(byTask.body).toContain(other);
    expect(byTask.body).not.toContain(tagged);
    expect((await browser.get(`${base}/runs?status=QUEUED`)).body).toContain(tagged);
    expect((await browser.get(`${base}/runs?status=COMPLETED`)).body).not.toContain(tagged);
    const testRun = await trigger("alpha", { options: { test: true } });
    const onlyTests = await browser.get(`${base}/runs?test=true`);
    expect(onlyTests.body).toContain(testRun);
    expect(onlyTests.body).not.toContain(tagged);
    expect(onlyTests.body).toMatch(/<option value="true" selected>only<\/option>/);
    const noTests = await browser.get(`${base}/runs?test=false`);
    expect(noTests.body).toContain(tagged);
    expect(noTests.body).not.toContain(testRun);
    // Queued runs have no version yet; one that a worker of version 7.1 claimed has.
    await api.db.pool.query(`UPDATE runs SET worker_version = '7.1' WHERE id = $1`, [other]);
    await api.db.pool.query(`INSERT INTO worker_versions (environment_id, version, seen_until) VALUES ($1, '7.1', now() + interval '1 minute')`, [api.env.id]);
    const byVersion = await browser.get(`${base}/runs?version=7.1`);
    expect(byVersion.body).toContain(other);
    expect(byVersion.body).not.toContain(tagged);
    expect(byVersion.body).toContain('value="7.1"');
    const fragment = await browser.get(`${base}/runs`, { "hx-request": "true" });
    expect(fragment.body.startsWith('<div id="runs-table"')).toBe(true);
    expect(fragment.body).not.toContain("<html");
    for (let i = 0; i < 26; i++) await trigger("paged");
    const first = await browser.get(`${base}/runs?task=paged`);
    const next = /href="([^"]*after=[^"]*)"/.exec(first.body)![1]!.replace(/&amp;/g, "&");
    const second = await browser.get(next);
    expect(second.statusCode).toBe(200);
    expect((second.body.match(/\/runs\/run_/g) ?? []).length).toBe(1);
  });

  it("answers bad filters with a 400 page, never a 500", async () => {
    for (const query of ["status=NOPE", "from=2026-13-45T00:00", "after=garbage", "task=%00", "test=maybe", "version=%00"]) {
      const res = await browser.get(`${base}/runs?${query}`);
      expect(res.statusCode, query).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, query).toBeLessThan(500);
      expect(res.headers["content-type"]).toMatch(/text\/html/);
    }
  });
});

describe("run page", () => {
  it("says where the run waits its turn: its queue, keys, named limits and gates, escaped", async () => {
    const runId = await trigger("alpha", {
      options: { concurrencyKey: "<b>acme</b>", rateLimit: { key: "rk-1", limit: 5, period: "1h" }, concurrency: ["image-api"], gates: [{ queue: "emails", concurrencyKey: "k2" }] },
    });
    const page = await browser.get(`${base}/runs/${runId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`href="${base}/runs?queue=task%2Falpha"`);
    expect(page.body).toContain("<dt>Concurrency key</dt><dd class=\"mono\">&lt;b&gt;acme&lt;/b&gt;</dd>");
    expect(page.body).not.toContain("<b>acme</b>");
    expect(page.body).toContain("<dt>Rate key</dt><dd class=\"mono\">rk-1</dd>");
    expect(page.body).toContain("<dt>Own rate</dt><dd>5 per 1 h</dd>");
    expect(page.body).toContain("<dt>Concurrency limits</dt><dd class=\"mono\">image-api</dd>");
    expect(page.body).toContain("<dt>Gates</dt><dd class=\"mono\">emails (key k2)</dd>");
    // A plain run shows its queue and nothing it does not have.
    const plain = await browser.get(`${base}/runs/${await trigger("beta")}`);
    expect(plain.body).toContain("<dt>Queue</dt>");
    expect(plain.body).not.toContain("<dt>Gates</dt>");
    expect(plain.body).not.toContain("<dt>Concurrency key</dt>");
    expect(plain.body).not.toContain("<dt>Own rate</dt>");
  });

  it("cancels a run and replays it", async () => {
    const runId = await trigger("alpha", { payload: { hello: "world" } });
    const page = await browser.get(`${base}/runs/${runId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("&quot;hello&quot;: &quot;world&quot;");
    const canceled = await browser.post(`${base}/runs/${runId}/cancel`, { _csrf: csrfOf(page.body) });
    expect(canceled.statusCode).toBe(303);
    const after = await browser.get(String(canceled.headers.location));
    expect(after.body).toContain("status-canceled");
    expect(after.body).toContain("was canceled");
    // Replay asks first (a confirmation page), and replays on the confirmed form.
    const review = await browser.post(`${base}/runs/${runId}/replay`, { _csrf: csrfOf(page.body) });
    expect(review.statusCode).toBe(200);
    expect(review.body).toContain("with the same payload");
    const replayed = await browser.post(`${base}/runs/${runId}/replay`, { _csrf: csrfOf(page.body), confirm: "yes" });
    expect(replayed.statusCode).toBe(303);
    const newId = /runs\/(run_[^?]+)/.exec(String(replayed.headers.location))![1]!;
    expect(newId).not.toBe(runId);
    const res = await api.app.inject({ method: "GET", url: `/api/v3/runs/${newId}`, headers: api.devAuth });
    expect(res.json().payload).toEqual({ hello: "world" });
  });

  it("replays a failed run from its failure with a button only failed runs have (a CSRF-checked POST)", async () => {
    const failed = await trigger("alpha", { payload: { n: 1 } });
    await api.db.pool.query(`UPDATE runs SET status = 'FAILED', finished_at = now() WHERE id = $1`, [failed]);
    await api.db.pool.query(`INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, resolved, outcome) VALUES ($1, 0, '#0', 'step', 'one', true, '{"ok":true,"value":"{\\"json\\":1}"}')`, [failed]);
    const page = await browser.get(`${base}/runs/${failed}`);
    expect(page.body).toContain(`action="${base}/runs/${failed}/replay-from-failure"`);
    expect((await browser.post(`${base}/runs/${failed}/replay-from-failure`, {})).statusCode).toBe(403);
    const replayed = await browser.post(`${base}/runs/${failed}/replay-from-failure`, { _csrf: csrfOf(page.body) });
    expect(replayed.statusCode).toBe(303);
    const newId = /runs\/(run_[^?]+)/.exec(String(replayed.headers.location))![1]!;
    expect(newId).not.toBe(failed);
    expect((await browser.get(String(replayed.headers.location))).body).toContain("resumes the failed run from where it failed");
    const { rows } = await api.db.pool.query(`SELECT epoch, step_key, target FROM run_ledger WHERE run_id = $1`, [newId]);
    expect(rows).toEqual([{ epoch: 1, step_key: "#0", target: "one" }]);

    // A run that did not fail has no such button, and a POST made anyway is refused.
    const queued = await browser.get(`${base}/runs/${newId}`);
    expect(queued.body).not.toContain("replay-from-failure");
    const refused = await browser.post(`${base}/runs/${newId}/replay-from-failure`, { _csrf: csrfOf(queued.body) });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain("can be replayed from its failure");
  });

  it("shows what the run logged under its attempt, filtered by level and text", async () => {
    const id = await trigger("logging");
    // Attempt 1 as a worker leaves it: claimed and finished (the lines were written by its worker).
    await api.db.pool.query(`UPDATE runs SET status = 'COMPLETED', attempt_number = 1, started_at = now(), finished_at = now() + interval '1 second' WHERE id = $1`, [id]);
    const line = (message: string, level: "info" | "warn" | "error", attributes: Record<string, unknown> | null = null) => ({
      environmentId: api.env.id, runId: id, attempt: 1, level, message, attributes, loggedAt: new Date(), source: "logger" as const, step: null, ledger: { epoch: 0, key: "#0" },
    });
    await appendRunLogs(api.db.pool, [line("charging <card>", "info", { orderId: "o_7" }), line("card declined", "warn"), line("giving up", "error")], DEFAULT_RUN_LOG_LIMITS);
    const page = await browser.get(`${base}/runs/${id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("charging &lt;card&gt;");
    expect(page.body).toContain("{&quot;orderId&quot;:&quot;o_7&quot;}");
    expect(page.body).toContain('<tr class="tl-row tl-kind-log tl-level-warn tl-depth-1">');
    const warnings = await browser.get(`${base}/runs/${id}?logLevel=warn`);
    expect(warnings.body).not.toContain("charging &lt;card&gt;");
    expect(warnings.body).toContain("card declined");
    expect(warnings.body).toContain("2 of 3 lines");
    const text = await browser.get(`${base}/runs/${id}?logText=GIVING`);
    expect(text.body).toContain("giving up");
    expect(text.body).not.toContain("card declined");
    // A filter it does not know is no filter, never an error.
    const odd = await browser.get(`${base}/runs/${id}?logLevel=%00&logText=${"x".repeat(5000)}`);
    expect(odd.statusCode).toBe(200);
  });

  it("answers an unknown run with a 404 page", async () => {
    expect((await browser.get(`${base}/runs/run_doesnotexist`)).statusCode).toBe(404);
    expect((await browser.post(`${base}/runs/run_doesnotexist/cancel`, { _csrf: csrfOf((await browser.get(`${base}/runs`)).body) })).statusCode).toBe(404);
  });
});

describe("waitpoint tokens", () => {
  it("lists tokens with filters and completes a WAITING one after a confirmation", async () => {
    const token = await createToken({ tags: ["approve"] });
    const untagged = await createToken();
    const list = await browser.get(`${base}/tokens?tag=approve`);
    expect(list.body).toContain(token);
    expect(list.body).not.toContain(untagged);
    const page = await browser.get(`${base}/tokens/${token}`);
    expect(page.body).toContain('name="output"');
    const csrf = csrfOf(page.body);
    const invalid = await browser.post(`${base}/tokens/${token}/complete`, { _csrf: csrf, output: "{nope" });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.body).toContain("not valid JSON");
    expect(invalid.body).toContain("{nope");
    const review = await browser.post(`${base}/tokens/${token}/complete`, { _csrf: csrf, output: '{"approved": true, "by": "<b>x</b>"}' });
    expect(review.statusCode).toBe(200);
    expect(review.body).toContain('name="confirm" value="yes"');
    expect(review.body).not.toContain("<b>x</b>");
    // Reviewing completed nothing.
    expect((await api.app.inject({ method: "GET", url: `/api/v1/waitpoints/tokens/${token}`, headers: api.devAuth })).json().status).toBe("WAITING");
    const forged = await browser.post(`${base}/tokens/${token}/complete`, { _csrf: "forged", output: "{}", confirm: "yes" });
    expect(forged.statusCode).toBe(403);
    const done = await browser.post(`${base}/tokens/${token}/complete`, { _csrf: csrf, output: '{"approved": true, "by": "<b>x</b>"}', confirm: "yes" });
    expect(done.statusCode).toBe(303);
    const retrieved = (await api.app.inject({ method: "GET", url: `/api/v1/waitpoints/tokens/${token}`, headers: api.devAuth })).json();
    expect(retrieved.status).toBe("COMPLETED");
    expect(JSON.parse(retrieved.output)).toEqual({ approved: true, by: "<b>x</b>" });
    const shown = await browser.get(String(done.headers.location));
    expect(shown.body).toContain("Token completed");
    expect(shown.body).not.toContain('name="output"');
    const again = await browser.post(`${base}/tokens/${token}/complete`, { _csrf: csrf, output: "{}", confirm: "yes" });
    expect(String(again.headers.location)).toContain("already-finished");
  });

  it("answers another environment's or an unknown token with a 404 page", async () => {
    const prodToken = (await api.app.inject({ method: "POST", url: "/api/v1/waitpoints/tokens", headers: { authorization: `Bearer ${api.project.environments.prod.secretKey}` }, payload: {} })).json().id;
    expect((await browser.get(`${base}/tokens/${prodToken}`)).statusCode).toBe(404);
    expect((await browser.get(`${base}/tokens/waitpoint_nope`)).statusCode).toBe(404);
    expect((await browser.get(`${base}/tokens?status=BOGUS`)).statusCode).toBe(400);
  });
});

describe("queues and workers", () => {
  it("shows each queue's depth and running count, and says when no worker is live", async () => {
    await trigger("queue-a", { options: { queue: { name: "q-reports" } } });
    await trigger("queue-a", { options: { queue: { name: "q-reports" } } });
    const page = await browser.get(`${base}/queues`);
    expect(page.statusCode).toBe(200);
    const row = /<tr>\s*<td><a href="[^"]*queue=q-reports[^"]*">q-reports<\/a><\/td><td>(\d+)<\/td>/.exec(page.body);
    expect(row?.[1]).toBe("2");
    expect(page.body).toContain("No worker of this environment is running");
  });

  it("says which queues have runs with their own rate, and how many of them wait for a slot", async () => {
    for (let i = 0; i < 2; i++) await trigger("queue-own", { options: { queue: { name: "q-own-rate" }, rateLimit: { key: "c", limit: 1, period: "1h" } } });
    const page = await browser.get(`${base}/queues`);
    const row = /q-own-rate<\/a><\/td>.*?<\/tr>/s.exec(page.body)?.[0] ?? "";
    expect(row).toContain('<span class="muted">runs with their own rate</span><br><span class="rate-waiting">1 waiting for their slot</span>');
  });

  it("marks a paused queue and shows an overridden limit beside the declared one", async () => {
    await registerQueues(api.db.pool, api.env.id, ["task/beta"], new Date());
    const post = (path: string, payload: object) => api.app.inject({ method: "POST", url: `/api/v1/queues/beta${path}`, headers: api.devAuth, payload: { type: "task", ...payload } });
    expect((await post("/pause", { action: "pause" })).statusCode).toBe(200);
    expect((await post("/concurrency/override", { concurrencyLimit: 3 })).statusCode).toBe(200);
    const page = await browser.get(`${base}/queues`);
    expect(page.body).toMatch(/>task\/beta<\/a> <span class="badge"[^>]*>paused<\/span><\/td>/);
    expect(page.body).toContain("3 <span class=\"muted\" title=\"Overridden until reset\">(overridden; declared unlimited)</span>");
    expect((await post("/pause", { action: "resume" })).statusCode).toBe(200);
    expect((await post("/concurrency/reset", {})).statusCode).toBe(200);
    const after = await browser.get(`${base}/queues`);
    expect(after.body).not.toContain("paused</span>");
    expect(after.body).not.toContain("overridden;");
  });
});

describe("runs nothing will run", () => {
  it("flags queued runs of a task no live worker serves on the runs and queues pages, and says whether it was ever registered", async () => {
    const typo = await trigger("hello-wrold");
    await api.db.pool.query(
      `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version) VALUES ($1, 'gone-worker-task', 'task/gone-worker-task', 'v1')`,
      [api.env.id],
    );
    await trigger("gone-worker-task");
    const runs = await browser.get(`${base}/runs?task=hello-wrold`);
    expect(runs.body).toContain("no worker</span>");
    expect(runs.body).toMatch(/no live worker of this environment serves \(hello-wrold\)/);
    const fragment = await browser.get(`${base}/runs?task=hello-wrold`, { "hx-request": "true" });
    expect(fragment.body).toContain("no worker</span>");
    const queues = await browser.get(`${base}/queues`);
    expect(queues.body).toContain("Queued runs no live worker serves");
    expect(queues.body).toMatch(/<strong>hello-wrold<\/strong><\/a>: 1 queued, the oldest for [^—]+— no worker of this environment ever registered this task/);
    // Never registered: its runs read PENDING_VERSION (as Trigger.dev shows them), and the queues page links there.
    expect(queues.body).toContain("runs?task=hello-wrold&amp;status=PENDING_VERSION");
    expect(queues.body).toContain("runs?task=gone-worker-task&amp;status=QUEUED");
    expect((await browser.get(`${base}/runs?task=hello-wrold&status=PENDING_VERSION`)).body).toContain(typo);
    expect((await browser.get(`${base}/runs/${typo}`)).body).toContain("PENDING_VERSION");
    expect(queues.body).toMatch(/<strong>gone-worker-task<\/strong><\/a>: 1 queued, the oldest for [^—]+— no live worker has this task/);
    // A live worker with the task: no longer flagged.
    await api.db.pool.query(`INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until) VALUES ('worker_typo', $1, '{hello-wrold}', 'v1', 0, now() + interval '1 hour')`, [api.env.id]);
    expect((await browser.get(`${base}/runs?task=hello-wrold`)).body).not.toContain("no worker</span>");
    expect((await browser.get(`${base}/queues`)).body).not.toContain("<strong>hello-wrold</strong>");
    await api.db.pool.query(`DELETE FROM workers WHERE id = 'worker_typo'`);
    expect(typo).toMatch(/^run_/);
  });
});

describe("preview branches", () => {
  it("shows a branch's runs through the branch picker, and keeps the branch in links", async () => {
    await createPreviewBranch(api, api.project.projectRef, "feat-dash");
    const res = await api.app.inject({ method: "POST", url: "/api/v1/tasks/alpha/trigger", headers: { authorization: `Bearer ${api.project.environments.preview.secretKey}`, "x-trigger-branch": "feat-dash" }, payload: { payload: 1 } });
    const runId = res.json().id as string;
    const preview = `/dashboard/${api.project.projectRef}/preview`;
    const root = await browser.get(`${preview}/runs`);
    expect(root.body).toContain("<option>feat-dash</option>");
    expect(root.body).not.toContain(runId);
    const branch = await browser.get(`${preview}/runs?branch=feat-dash`);
    expect(branch.body).toContain(runId);
    expect(branch.body).toContain(`runs/${runId}?branch=feat-dash`);
    expect((await browser.get(`${preview}/runs/${runId}?branch=feat-dash`)).statusCode).toBe(200);
    expect((await browser.get(`${preview}/runs/${runId}`)).statusCode).toBe(404);
    expect((await browser.get(`${preview}/runs?branch=nope`)).statusCode).toBe(404);
  });
});
