// The dashboard's everyday loop over app.inject: the tasks page and its Test form, replay with an
// edited payload after a confirmation, run id search, child runs marked in the list and on the run
// page, bad input as pages (never a 5xx), and nothing of it reachable signed out.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";
import { createUserWithPat } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";

let api: TestApi;
let browser: DashboardBrowser;
let base: string;
let csrf: string;

async function trigger(task: string, body: Record<string, unknown> = {}) {
  const res = await api.app.inject({ method: "POST", url: `/api/v1/tasks/${task}/trigger`, headers: api.devAuth, payload: { payload: 1, ...body } });
  expect(res.statusCode).toBe(200);
  return res.json().id as string;
}

async function retrieve(runId: string) {
  const res = await api.app.inject({ method: "GET", url: `/api/v3/runs/${runId}`, headers: api.devAuth });
  expect(res.statusCode).toBe(200);
  return res.json();
}

async function register(environmentId: string, task: string, queue = `task/${task}`) {
  await api.db.pool.query(`INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version) VALUES ($1, $2, $3, '3.1')`, [environmentId, task, queue]);
}

const runIdOf = (location: unknown) => /runs\/(run_[0-9a-z]+)/.exec(String(location))![1]!;
const unescape = (text: string) => text.replaceAll("&quot;", '"').replaceAll("&amp;", "&").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&#39;", "'");
const textareaOf = (page: string) => unescape(/<textarea[^>]*name="payload"[^>]*>([\s\S]*?)<\/textarea>/.exec(page)![1]!);

beforeAll(async () => {
  api = await startTestApi();
  base = `/dashboard/${api.project.projectRef}/dev`;
  const user = await createUserWithPat(api, "everyday@example.com", { memberOf: [api.project.projectRef] });
  browser = new DashboardBrowser(api.app);
  expect((await browser.signIn(user.pat)).statusCode).toBe(303);
  csrf = DashboardBrowser.field((await browser.get(`${base}/runs`)).body, "_csrf");
  await register(api.env.id, "send-email", "mail");
  await register(api.env.id, "resize");
  await register(api.project.environments.prod.id, "prod-only");
});
afterAll(async () => api?.close());

describe("tasks page", () => {
  it("lists the environment's registered tasks with their queue and last runs", async () => {
    const run = await trigger("send-email", { payload: { to: "a@example.com" } });
    const page = await browser.get(`${base}/tasks`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('aria-current="page">Tasks</a>');
    const row = /<tr data-task="send-email">([\s\S]*?)<\/tr>/.exec(page.body)![1]!;
    expect(row).toContain(">mail</a>");
    expect(row).toContain(`/runs/${run}`);
    expect(row).toContain("status-queued");
    expect(page.body).toContain('<tr data-task="resize">');
    // Another environment's tasks are not this one's.
    expect(page.body).not.toContain("prod-only");
  });

  it("prefills the Test form with the last run's payload, or {} when the task never ran", async () => {
    await trigger("send-email", { payload: { to: "last@example.com", n: 2 } });
    const page = await browser.get(`${base}/tasks/send-email`);
    expect(page.statusCode).toBe(200);
    expect(JSON.parse(textareaOf(page.body))).toEqual({ to: "last@example.com", n: 2 });
    expect(textareaOf((await browser.get(`${base}/tasks/resize`)).body)).toBe("{}");
  });

  it("shows the concurrency limits a task's runs hold", async () => {
    expect((await browser.get(`${base}/tasks/resize`)).body).toContain('<dt>Holds limits</dt><dd><span class="muted">none</span></dd>');
    await api.db.pool.query(`UPDATE worker_tasks SET concurrency_limits = $2 WHERE environment_id = $1 AND task_identifier = 'send-email'`, [api.env.id, ["openai", "task/send-email"]]);
    expect((await browser.get(`${base}/tasks/send-email`)).body).toContain("<dt>Holds limits</dt><dd>openai, task/send-email</dd>");
  });

  it("triggers a test run with the typed payload (CRLF line breaks and all) and opens it", async () => {
    const res = await browser.post(`${base}/tasks/resize/test`, { _csrf: csrf, payload: '{\r\n  "width": 640,\r\n  "label": "\\"123\\""\r\n}' });
    expect(res.statusCode).toBe(303);
    const runId = runIdOf(res.headers.location);
    expect(String(res.headers.location)).toContain("notice=tested");
    const run = await retrieve(runId);
    expect(run.taskIdentifier).toBe("resize");
    expect(run.payload).toEqual({ width: 640, label: '"123"' });
    expect(run.isTest).toBe(true);
    const shown = await browser.get(String(res.headers.location));
    expect(shown.body).toContain("Test run triggered");
    // The next Test form starts from it.
    expect(JSON.parse(textareaOf((await browser.get(`${base}/tasks/resize`)).body))).toEqual({ width: 640, label: '"123"' });
  });

  it("keeps a JSON string payload a string", async () => {
    const res = await browser.post(`${base}/tasks/resize/test`, { _csrf: csrf, payload: '"123"' });
    expect((await retrieve(runIdOf(res.headers.location))).payload).toBe("123");
  });

  it("answers bad input with a page that says what is wrong, never a 5xx, and triggers nothing", async () => {
    const before = (await api.db.pool.query(`SELECT count(*)::int AS n FROM runs`)).rows[0].n;
    const bad = await browser.post(`${base}/tasks/resize/test`, { _csrf: csrf, payload: '{"width": 640,' });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers["content-type"]).toMatch(/text\/html/);
    expect(bad.body).toContain('class="problem" role="alert">Payload: not valid JSON');
    // What was typed is kept in the form.
    expect(textareaOf(bad.body)).toBe('{"width": 640,');
    const empty = await browser.post(`${base}/tasks/resize/test`, { _csrf: csrf, payload: "  " });
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toContain("The payload is empty");
    const deep = await browser.post(`${base}/tasks/resize/test`, { _csrf: csrf, payload: "[".repeat(200) + "]".repeat(200) });
    expect(deep.statusCode).toBe(400);
    const unstorable = await browser.post(`${base}/tasks/resize/test`, { _csrf: csrf, payload: '{"a":"\\u0000"}' });
    expect(unstorable.statusCode).toBe(400);
    const large = await browser.post(`${base}/tasks/resize/test`, { _csrf: csrf, payload: JSON.stringify({ blob: "x".repeat(600 * 1024) }) });
    expect(large.statusCode).toBe(413);
    expect(large.body).toContain("trigger larger payloads from code");
    // Past the form limit (1 MiB) the body is refused before the page sees it: still a page.
    const huge = await browser.post(`${base}/tasks/resize/test`, { _csrf: csrf, payload: "x".repeat(1100 * 1024) });
    expect(huge.statusCode).toBe(413);
    expect(huge.headers["content-type"]).toMatch(/text\/html/);
    const unknown = await browser.post(`${base}/tasks/no-such-task/test`, { _csrf: csrf, payload: "{}" });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain("Task not found");
    expect((await browser.get(`${base}/tasks/no-such-task`)).statusCode).toBe(404);
    // Another environment's task is not found here either.
    expect((await browser.post(`${base}/tasks/prod-only/test`, { _csrf: csrf, payload: "{}" })).statusCode).toBe(404);
    expect((await api.db.pool.query(`SELECT count(*)::int AS n FROM runs`)).rows[0].n).toBe(before);
  });

  it("tests a scheduled task with a schedule's payload, its times as Dates", async () => {
    await api.db.pool.query(`INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, kind, worker_version) VALUES ($1, 'nightly', 'task/nightly', 'SCHEDULED', '3.1')`, [api.env.id]);
    const form = await browser.get(`${base}/tasks/nightly`);
    const example = JSON.parse(textareaOf(form.body));
    expect(example).toMatchObject({ scheduleId: "sched_test", type: "IMPERATIVE", timezone: "UTC", upcoming: [] });
    expect(Number.isNaN(new Date(example.timestamp).getTime())).toBe(false);
    const res = await browser.post(`${base}/tasks/nightly/test`, { _csrf: csrf, payload: JSON.stringify({ ...example, timestamp: "2030-01-02T03:04:05.000Z", upcoming: ["2030-01-03T03:04:05.000Z"] }) });
    expect(res.statusCode).toBe(303);
    const { rows } = await api.db.pool.query(`SELECT payload, payload_type, is_test FROM runs WHERE id = $1`, [runIdOf(res.headers.location)]);
    expect(rows[0].payload_type).toBe("application/super+json");
    expect(rows[0].is_test).toBe(true);
    const stored = JSON.parse(rows[0].payload);
    expect(stored.json.timestamp).toBe("2030-01-02T03:04:05.000Z");
    expect(stored.meta.values).toMatchObject({ timestamp: ["Date"], "upcoming.0": ["Date"] });
  });

  it("refuses a Test without the session's CSRF token", async () => {
    const res = await browser.post(`${base}/tasks/resize/test`, { _csrf: "forged", payload: "{}" });
    expect(res.statusCode).toBe(403);
    const none = await browser.post(`${base}/tasks/resize/test`, { payload: "{}" });
    expect(none.statusCode).toBe(403);
  });
});

describe("replay with an edited payload", () => {
  it("shows the run's payload to edit, confirms, then replays with the edit", async () => {
    const runId = await trigger("send-email", { payload: { to: "a@example.com" }, options: { tags: ["keep"] } });
    const form = await browser.get(`${base}/runs/${runId}/replay`);
    expect(form.statusCode).toBe(200);
    expect(JSON.parse(textareaOf(form.body))).toEqual({ to: "a@example.com" });
    const review = await browser.post(`${base}/runs/${runId}/replay`, { _csrf: csrf, payload: '{"to": "b@example.com"}' });
    expect(review.statusCode).toBe(200);
    expect(review.body).toContain("<strong>edited</strong>");
    expect(review.body).toContain("&quot;to&quot;: &quot;b@example.com&quot;");
    // Reviewing changes nothing yet.
    expect((await api.db.pool.query(`SELECT count(*)::int AS n FROM runs WHERE task_identifier = 'send-email' AND payload LIKE '%b@example.com%'`)).rows[0].n).toBe(0);
    const confirmed = await browser.post(`${base}/runs/${runId}/replay`, { _csrf: csrf, payload: DashboardBrowser.field(review.body, "payload").replaceAll("&quot;", '"'), confirm: "yes" });
    expect(confirmed.statusCode).toBe(303);
    const replay = await retrieve(runIdOf(confirmed.headers.location));
    expect(replay.id).not.toBe(runId);
    expect(replay.payload).toEqual({ to: "b@example.com" });
    expect(replay.tags).toEqual(["keep"]);
  });

  it("keeps the stored payload as it is when it was not edited (whitespace aside)", async () => {
    // Superjson keeps a Date a Date: an unchanged replay must not turn it into a JSON string.
    const superjson = JSON.stringify({ json: { at: "2030-01-02T03:04:05.000Z" }, meta: { values: { at: ["Date"] } } });
    const runId = await trigger("send-email", { payload: superjson, options: { payloadType: "application/super+json" } });
    const form = await browser.get(`${base}/runs/${runId}/replay`);
    const review = await browser.post(`${base}/runs/${runId}/replay`, { _csrf: csrf, payload: textareaOf(form.body).replaceAll("\n", "\r\n") });
    expect(review.body).toContain("with the same payload");
    expect(review.body).not.toContain('name="payload"');
    const confirmed = await browser.post(`${base}/runs/${runId}/replay`, { _csrf: csrf, confirm: "yes" });
    const newId = runIdOf(confirmed.headers.location);
    const { rows } = await api.db.pool.query(`SELECT payload, payload_type FROM runs WHERE id = $1`, [newId]);
    expect(rows[0]).toEqual({ payload: superjson, payload_type: "application/super+json" });
  });

  it("goes back to the form to edit again, and shows bad JSON on the form", async () => {
    const runId = await trigger("send-email", { payload: { n: 1 } });
    const count = async () => (await api.db.pool.query(`SELECT count(*)::int AS n FROM runs WHERE task_identifier = 'send-email'`)).rows[0].n;
    const before = await count();
    const edit = await browser.post(`${base}/runs/${runId}/replay`, { _csrf: csrf, payload: '{"n": 2}', edit: "yes" });
    expect(edit.statusCode).toBe(200);
    expect(textareaOf(edit.body)).toBe('{"n": 2}');
    const bad = await browser.post(`${base}/runs/${runId}/replay`, { _csrf: csrf, payload: "{n: 2}", confirm: "yes" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("Payload: not valid JSON");
    const large = await browser.post(`${base}/runs/${runId}/replay`, { _csrf: csrf, payload: JSON.stringify("y".repeat(600 * 1024)), confirm: "yes" });
    expect(large.statusCode).toBe(413);
    expect(await count()).toBe(before);
    expect((await browser.post(`${base}/runs/run_doesnotexist/replay`, { _csrf: csrf, confirm: "yes" })).statusCode).toBe(404);
    expect((await browser.get(`${base}/runs/run_doesnotexist/replay`)).statusCode).toBe(404);
    expect((await browser.post(`${base}/runs/${runId}/replay`, { _csrf: "forged", confirm: "yes" })).statusCode).toBe(403);
  });
});

describe("run id search", () => {
  it("opens the run of a whole id, lists the runs of a prefix, and keeps the other filters", async () => {
    const a = await trigger("searched", { options: { tags: ["s1"] } });
    const b = await trigger("searched");
    const exact = await browser.get(`${base}/runs?q=${a}`);
    expect(exact.statusCode).toBe(303);
    expect(exact.headers.location).toBe(`${base}/runs/${a}`);
    // Without run_, in capitals, with spaces: the same id.
    expect((await browser.get(`${base}/runs?q=${encodeURIComponent(`  ${a.slice(4).toUpperCase()} `)}`)).headers.location).toBe(`${base}/runs/${a}`);
    // A prefix both ids share (they were made in the same few ms: the time part) lists both.
    let shared = 4;
    while (a[shared] === b[shared]) shared++;
    const prefix = await browser.get(`${base}/runs?q=${a.slice(0, shared)}`);
    expect(prefix.statusCode).toBe(200);
    expect(prefix.body).toContain(a);
    expect(prefix.body).toContain(b);
    const narrower = await browser.get(`${base}/runs?q=${a.slice(0, shared + 1)}`);
    expect(narrower.body).toContain(a);
    expect(narrower.body).not.toContain(`>${b}<`);
    const withTag = await browser.get(`${base}/runs?q=${a.slice(0, shared)}&tag=s1`);
    expect(withTag.body).toContain(a);
    expect(withTag.body).not.toContain(`>${b}<`);
    const withTask = await browser.get(`${base}/runs?q=${a.slice(0, shared)}&task=other`);
    expect(withTask.body).not.toContain(`>${a}<`);
    expect(withTask.body).toContain("has an id starting with");
    // The live refresh keeps the search.
    expect(prefix.body).toContain(`hx-get="${base}/runs?q=${a.slice(0, shared)}"`);
  });

  it("lists a whole id of another environment as no match, and says when the text cannot be a run id", async () => {
    const prodRun = (await api.app.inject({ method: "POST", url: "/api/v1/tasks/x/trigger", headers: { authorization: `Bearer ${api.project.environments.prod.secretKey}` }, payload: {} })).json().id as string;
    const other = await browser.get(`${base}/runs?q=${prodRun}`);
    expect(other.statusCode).toBe(200);
    expect(other.body).not.toContain(`>${prodRun}<`);
    for (const q of ["run-123", "<script>", "run_" + "a".repeat(30), "%00", "run_é"]) {
      const res = await browser.get(`${base}/runs?q=${encodeURIComponent(q)}`);
      expect(res.statusCode, q).toBe(400);
      expect(res.body, q).toContain("is not a run id or the start of one");
      expect(res.body).not.toContain("<script>");
    }
  });
});

describe("child runs", () => {
  it("marks a child run with its parent in the list, and links both ways on the run pages", async () => {
    const parent = await trigger("parent-task");
    const child = await trigger("child-task", { options: { parentRunId: parent } });
    const list = await browser.get(`${base}/runs`);
    const row = new RegExp(`<tr class="child depth-1" data-parent="${parent}">([\\s\\S]*?)</tr>`).exec(list.body);
    expect(row, "the child's row").not.toBeNull();
    expect(row![1]).toContain(`>${child}</a>`);
    expect(row![1]).toContain(`child of <a class="mono" href="${base}/runs/${parent}">${parent}</a>`);
    const childPage = await browser.get(`${base}/runs/${child}`);
    expect(childPage.body).toContain(`<p class="child-of">Child run of <a class="mono" href="${base}/runs/${parent}">`);
    const parentPage = await browser.get(`${base}/runs/${parent}`);
    expect(parentPage.body).toMatch(new RegExp(`<h2>Child runs</h2><ul class="children"><li><a class="mono" href="${base}/runs/${child}">`));
  });
});

describe("times", () => {
  it("writes every instant as <time datetime data-local> with UTC text, and serves the script that localises it", async () => {
    const runId = await trigger("timed");
    const page = await browser.get(`${base}/runs/${runId}`);
    expect(page.body).toMatch(/<time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z" data-local>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/time>/);
    expect(page.body).toContain('<script src="/dashboard/assets/local-times.js" defer></script>');
    const script = await browser.get("/dashboard/assets/local-times.js");
    expect(script.statusCode).toBe(200);
    expect(script.headers["content-type"]).toMatch(/javascript/);
  });
});

describe("signed out", () => {
  it("sends every new page and action to the sign-in form, doing nothing", async () => {
    const stranger = new DashboardBrowser(api.app);
    const runId = await trigger("send-email");
    const before = (await api.db.pool.query(`SELECT count(*)::int AS n FROM runs`)).rows[0].n;
    for (const url of [`${base}/tasks`, `${base}/tasks/send-email`, `${base}/runs/${runId}/replay`, `${base}/runs?q=${runId}`]) {
      const res = await stranger.get(url);
      expect(res.statusCode, url).toBe(303);
      expect(String(res.headers.location), url).toMatch(/^\/dashboard\/login/);
    }
    for (const url of [`${base}/tasks/send-email/test`, `${base}/runs/${runId}/replay`]) {
      const res = await stranger.post(url, { _csrf: csrf, payload: "{}", confirm: "yes" });
      expect(res.statusCode, url).toBe(303);
      expect(String(res.headers.location), url).toMatch(/^\/dashboard\/login/);
    }
    expect((await api.db.pool.query(`SELECT count(*)::int AS n FROM runs`)).rows[0].n).toBe(before);
  });
});
