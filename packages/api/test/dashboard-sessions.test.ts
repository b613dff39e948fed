import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendRecords, type Environment } from "@svc/runtime/engine";
import type { ListeningApi } from "./client-server.ts";
import { bearer, createOtherProject } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";
import { rowsOf, startSignedInDashboard, type SignedInDashboard } from "./dashboard-session-helpers.ts";
import { append, createSession, createSessionOk } from "./sessions-helpers.ts";

let api: ListeningApi;
let ref: string;
let browser: DashboardBrowser;
let env: Environment;
let base: string;
let openStream: SignedInDashboard["openStream"];

beforeAll(async () => {
  ({ api, browser, env, base, openStream } = await startSignedInDashboard());
  ref = api.project.projectRef;
});
afterAll(async () => api?.close());

describe("session list", () => {
  it("lists sessions with the API's filters and cursor pages", async () => {
    const a = await createSessionOk(api, { type: "list.a", externalId: "list-a", tags: ["blue"] });
    const b = await createSessionOk(api, { type: "list.b", taskIdentifier: "other-task", tags: ["green"] });
    const c = await createSessionOk(api, { type: "list.a" });
    await api.app.inject({ method: "POST", url: `/api/v1/sessions/${c.id}/close`, headers: api.devAuth, payload: { reason: "done" } });
    const d = await createSessionOk(api, { type: "list.a", expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    await api.db.pool.query(`UPDATE sessions SET expires_at = now() - interval '1 minute' WHERE id = $1`, [d.id]);

    const all = await browser.get(base);
    expect(all.statusCode).toBe(200);
    for (const s of [a, b, c, d]) expect(all.body).toContain(`/sessions/${s.id}"`);
    expect(all.body).toContain("list-a");
    expect(all.body).toContain('hx-trigger="every 3s"');
    const ids = async (query: string) => [...(await browser.get(`${base}?${query}`)).body.matchAll(/\/sessions\/(session_[^"?/]+)"/g)].map((m) => m[1]);
    expect(await ids("type=list.a")).toEqual([d.id, c.id, a.id]);
    expect(await ids("type=list.a&status=CLOSED")).toEqual([c.id]);
    expect(await ids("type=list.a&status=EXPIRED")).toEqual([d.id]);
    expect(await ids("type=list.a&status=ACTIVE")).toEqual([a.id]);
    expect(await ids("task=other-task")).toEqual([b.id]);
    expect(await ids("tag=green")).toEqual([b.id]);
    expect(await ids("externalId=list-a")).toEqual([a.id]);
    // The htmx refresh gets the table alone.
    const fragment = await browser.get(`${base}?type=list.a`, { "hx-request": "true" });
    expect(fragment.body.startsWith('<div id="sessions-table"')).toBe(true);

    const paged: string[] = [];
    for (let i = 0; i < 26; i++) paged.push((await createSessionOk(api, { type: "paged" })).id);
    const first = await browser.get(`${base}?type=paged`);
    expect([...first.body.matchAll(/<tr>\s*<td><a class="mono"/g)]).toHaveLength(25);
    const older = /href="([^"]*after=[^"]*)"/.exec(first.body)![1]!.replaceAll("&amp;", "&");
    const second = await browser.get(older);
    expect(second.body).toContain(`/sessions/${paged[0]}"`);
    expect(second.body).not.toContain('hx-trigger="every 3s"');
    expect(second.body).toContain("← Newer");
  });

  it("answers bad filters and cursors with a 400 page", async () => {
    for (const query of ["status=NOPE", "after=not-a-cursor", "type=a%00b", "after=x&before=y"]) {
      const res = await browser.get(`${base}?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.headers["content-type"], query).toMatch(/text\/html/);
    }
  });
});

describe("session page", () => {
  it("shows the facts, the runs and the latest records of each channel, by id or externalId", async () => {
    const s = await createSessionOk(api, { externalId: "page-facts", tags: ["t1"] });
    await append(api, s.id, "in", `{"text":"hello"}`);
    await append(api, s.id, "out", `plain words`);
    await appendRecords(api.engine, env, s.id, "out", [{ data: null, headers: [["trigger-control", "turn-complete"]] }]);
    for (const path of [s.id, "page-facts"]) {
      const page = await browser.get(`${base}/${path}`);
      expect(page.statusCode, path).toBe(200);
      expect(page.body).toContain(`href="/dashboard/${ref}/dev/runs/${s.runId}"`);
      expect(page.body).toContain(`href="/dashboard/${ref}/dev/runs?session=${s.id}"`);
      expect(rowsOf(page.body, "in")).toEqual([1]);
      expect(rowsOf(page.body, "out")).toEqual([1, 2]);
      expect(page.body).toContain("&quot;text&quot;: &quot;hello&quot;");
      expect(page.body).toContain("plain words");
      expect(page.body).toContain("trigger-control: turn-complete");
      expect(page.body).toContain(`data-records-stream="/dashboard/${ref}/dev/sessions/${s.id}/stream?in=1&amp;out=2"`);
      expect(page.body).toContain('<script src="/dashboard/assets/session-records.js" defer></script>');
    }
    const summary = await browser.get(`${base}/${s.id}`, { "hx-request": "true" });
    expect(summary.body.startsWith('<div id="session-summary"')).toBe(true);
    expect(summary.body).not.toContain("data-records-io");
  });

  it("shows the latest 200 records of a channel, each cut to 2048 characters", async () => {
    const s = await createSessionOk(api);
    await appendRecords(api.engine, env, s.id, "in", Array.from({ length: 205 }, (_, i) => ({ data: JSON.stringify(`m${i + 1}`) })));
    await append(api, s.id, "out", "z".repeat(10_000));
    await append(api, s.id, "out", JSON.stringify(Array(600).fill(1)));
    await append(api, s.id, "out", JSON.stringify({ long: "é".repeat(1500) }));
    const page = await browser.get(`${base}/${s.id}`);
    expect(rowsOf(page.body, "in")).toEqual(Array.from({ length: 200 }, (_, i) => i + 6));
    // Cut by the database (the stored JSON text is 10,002 bytes), and after pretty-printing.
    expect(page.body).toContain("cut (the whole record is 10002 bytes)");
    expect(page.body).toContain(`<pre class="json">&quot;${"z".repeat(2047)}</pre>`);
    expect(page.body).toContain("cut (the whole record is 3002 characters)");
    // 3,013 bytes but 1,513 characters: whole.
    expect(page.body).toContain(`&quot;long&quot;: &quot;${"é".repeat(1500)}&quot;`);
    expect([...page.body.matchAll(/… cut/g)]).toHaveLength(2);
  });

  it("escapes stored text", async () => {
    const evil = "<script>alert(1)</script>";
    const s = await createSessionOk(api, { type: evil, externalId: "x<img src=x onerror=alert(1)>", tags: ['"><b>t</b>'], metadata: { evil } });
    await append(api, s.id, "in", evil);
    await append(api, s.id, "out", JSON.stringify({ evil }));
    await appendRecords(api.engine, env, s.id, "out", [{ data: null, headers: [[evil, evil]] }]);
    for (const url of [`${base}/${s.id}`, base]) {
      const page = await browser.get(url);
      expect(page.statusCode).toBe(200);
      expect(page.body).not.toContain("<script>alert");
      expect(page.body).not.toContain("<img src=x");
      expect(page.body).not.toContain("<b>t</b>");
      expect(page.body).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    }
    // Streamed records are JSON the script writes with textContent only.
    const script = await browser.get("/dashboard/assets/session-records.js");
    expect(script.headers["content-type"]).toMatch(/javascript/);
    expect(script.body).toContain("textContent");
    expect(script.body).not.toMatch(/innerHTML|insertAdjacentHTML|outerHTML|eval\(/);
  });

  it("answers another project's session as not found, and bad ids with a 4xx page", async () => {
    const other = await createOtherProject(api);
    const foreign = await createSession(api, { externalId: "foreign" }, bearer(other.environments.dev.secretKey));
    const foreignId = foreign.json().id;
    for (const path of [foreignId, "foreign", `${foreignId}/stream`, "session_nope", "nope/stream"]) {
      const res = await browser.get(`${base}/${path}`);
      expect(res.statusCode, path).toBe(404);
      expect(res.body).not.toContain(foreignId.slice(8));
    }
    const own = await createSessionOk(api);
    for (const path of ["x".repeat(300), "a%00b", `${own.id}/stream?in=abc`, `${own.id}/stream?out=-1`]) {
      const res = await browser.get(`${base}/${path}`);
      expect(res.statusCode, path).toBe(400);
      expect(res.headers["content-type"], path).toMatch(/text\/html/);
    }
    const badResume = await openStream(`${base}/${own.id}/stream`, { "last-event-id": "7" });
    expect(badResume.status).toBe(400);
    await badResume.body?.cancel();
    const signedOut = await new DashboardBrowser(api.app).get(`${base}/${own.id}/stream`);
    expect(signedOut.statusCode).toBe(303);
    expect(signedOut.headers.location).toMatch(/^\/dashboard\/login/);
  });
});
