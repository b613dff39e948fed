import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokePersonalAccessToken } from "@svc/runtime/engine";
import { startTestApi, type TestApi } from "./harness.ts";
import { bearer, createOtherProject, createUserWithPat } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";

let api: TestApi;
let member: { userId: string; pat: string };
let outsider: { userId: string; pat: string };
let otherRunId: string;
let ref: string;

beforeAll(async () => {
  api = await startTestApi();
  ref = api.project.projectRef;
  member = await createUserWithPat(api, "member@example.com", { memberOf: [ref] });
  outsider = await createUserWithPat(api, "outsider@example.com");
  const other = await createOtherProject(api);
  const res = await api.app.inject({ method: "POST", url: "/api/v1/tasks/hello/trigger", headers: bearer(other.environments.dev.secretKey), payload: { payload: 1 } });
  otherRunId = res.json().id;
});
afterAll(async () => api?.close());

async function signedIn(pat = member.pat) {
  const browser = new DashboardBrowser(api.app);
  const res = await browser.signIn(pat);
  expect(res.statusCode).toBe(303);
  return browser;
}

describe("dashboard sign-in", () => {
  it("sends a signed-out browser from every page to the sign-in form, never a 404", async () => {
    const browser = new DashboardBrowser(api.app);
    for (const path of ["/dashboard", `/dashboard/${ref}/dev/runs`, `/dashboard/${ref}/dev/runs/run_nope`, "/dashboard/no/such/page", `/dashboard/${ref}/dev/tokens`]) {
      const res = await browser.get(path);
      expect(res.statusCode, path).toBe(303);
      expect(res.headers.location, path).toMatch(/^\/dashboard\/login/);
    }
    const page = await browser.get(`/dashboard/${ref}/dev/runs`);
    expect(page.headers.location).toBe(`/dashboard/login?next=${encodeURIComponent(`/dashboard/${ref}/dev/runs`)}`);
    // An htmx refresh is told to navigate rather than given the form to swap into a table.
    const polled = await browser.get(`/dashboard/${ref}/dev/runs`, { "hx-request": "true" });
    expect(polled.statusCode).toBe(204);
    expect(polled.headers["hx-redirect"]).toMatch(/^\/dashboard\/login/);
  });

  it("refuses every action without a session: nothing is done", async () => {
    const browser = new DashboardBrowser(api.app);
    const run = await api.app.inject({ method: "POST", url: "/api/v1/tasks/hello/trigger", headers: api.devAuth, payload: { payload: 1 } });
    const res = await browser.post(`/dashboard/${ref}/dev/runs/${run.json().id}/cancel`, { _csrf: "x" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toMatch(/^\/dashboard\/login/);
    const after = await api.app.inject({ method: "GET", url: `/api/v3/runs/${run.json().id}`, headers: api.devAuth });
    expect(after.json().status).not.toBe("CANCELED");
  });

  it("signs in with a PAT into an httpOnly SameSite cookie, and out again", async () => {
    const browser = new DashboardBrowser(api.app);
    const form = await browser.get("/dashboard/login");
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('name="token"');
    const res = await browser.post("/dashboard/login", { _csrf: DashboardBrowser.field(form.body, "_csrf"), token: member.pat });
    expect(res.statusCode).toBe(303);
    const cookie = String(res.headers["set-cookie"]).split(/,(?=\s*svc_)/).find((c) => c.trim().startsWith("svc_dashboard="))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\/dashboard/);
    // One project: straight to its dev runs.
    const home = await browser.get("/dashboard");
    expect(home.headers.location).toBe(`/dashboard/${ref}/dev/runs`);
    const runs = await browser.get(`/dashboard/${ref}/dev/runs`);
    expect(runs.statusCode).toBe(200);
    expect(runs.body).toContain("member@example.com");
    const out = await browser.post("/dashboard/logout", { _csrf: DashboardBrowser.field(runs.body, "_csrf") });
    expect(out.statusCode).toBe(303);
    expect((await browser.get(`/dashboard/${ref}/dev/runs`)).statusCode).toBe(303);
  });

  it("refuses a forged CSRF token at sign-in and on actions", async () => {
    const browser = new DashboardBrowser(api.app);
    await browser.get("/dashboard/login");
    const forged = await browser.post("/dashboard/login", { _csrf: "forged-token-forged-token-forged1", token: member.pat });
    expect(forged.statusCode).toBe(403);
    expect(browser.cookies.has("svc_dashboard")).toBe(false);
    // Without the form's cookie (a cross-site post) it is refused too.
    const bare = await api.app.inject({ method: "POST", url: "/dashboard/login", headers: { "content-type": "application/x-www-form-urlencoded" }, payload: `token=${member.pat}&_csrf=x` });
    expect(bare.statusCode).toBe(403);

    const signed = await signedIn();
    const run = await api.app.inject({ method: "POST", url: "/api/v1/tasks/hello/trigger", headers: api.devAuth, payload: { payload: 1 } });
    const runId = run.json().id;
    const refused = await signed.post(`/dashboard/${ref}/dev/runs/${runId}/cancel`, { _csrf: "forged" });
    expect(refused.statusCode).toBe(403);
    const missing = await signed.post(`/dashboard/${ref}/dev/runs/${runId}/cancel`, {});
    expect(missing.statusCode).toBe(403);
    const after = await api.app.inject({ method: "GET", url: `/api/v3/runs/${runId}`, headers: api.devAuth });
    expect(after.json().status).not.toBe("CANCELED");
  });

  it("answers a bad or revoked token on the form with the form again", async () => {
    const browser = new DashboardBrowser(api.app);
    expect((await browser.signIn("not-a-pat")).statusCode).toBe(400);
    expect((await browser.signIn("svc_pat_unknownunknownunknown")).statusCode).toBe(401);
    expect(browser.cookies.has("svc_dashboard")).toBe(false);
  });

  it("ends the sessions of a revoked PAT", async () => {
    const user = await createUserWithPat(api, "revoked@example.com", { memberOf: [ref] });
    const browser = await signedIn(user.pat);
    expect((await browser.get(`/dashboard/${ref}/dev/runs`)).statusCode).toBe(200);
    const { rows } = await api.db.pool.query<{ id: number }>(`SELECT id FROM personal_access_tokens WHERE user_id = $1`, [user.userId]);
    await revokePersonalAccessToken(api.db.pool, user.userId, rows[0]!.id, new Date());
    expect((await browser.get(`/dashboard/${ref}/dev/runs`)).statusCode).toBe(303);
  });

  it("goes back to the page asked for, but never off the dashboard", async () => {
    const browser = new DashboardBrowser(api.app);
    const back = await browser.signIn(member.pat, `/dashboard/${ref}/prod/runs`);
    expect(back.headers.location).toBe(`/dashboard/${ref}/prod/runs`);
    for (const next of ["https://evil.example/", "//evil.example/dashboard", "/dashboard/\\evil", "/api/v1/runs"]) {
      const res = await new DashboardBrowser(api.app).signIn(member.pat, next);
      expect(res.headers.location, next).toBe("/dashboard");
    }
  });

  it("percent-encodes a next path outside ASCII instead of failing (Location carries ASCII only)", async () => {
    for (const [next, location] of [
      [`/dashboard/${ref}/dev/runs?filter=€ 漢`, `/dashboard/${ref}/dev/runs?filter=%E2%82%AC%20%E6%BC%A2`],
      [`/dashboard/${ref}/dev/runs?q=é\u00ff`, `/dashboard/${ref}/dev/runs?q=%C3%A9%C3%BF`],
      [`/dashboard/${ref}/dev/runs?q=💩`, `/dashboard/${ref}/dev/runs?q=%F0%9F%92%A9`],
    ] as const) {
      const res = await new DashboardBrowser(api.app).signIn(member.pat, next);
      expect(res.statusCode, next).toBe(303);
      expect(res.headers.location, next).toBe(location);
      // Signed in already, the form redirects at once, the same way.
      const browser = await signedIn();
      const again = await browser.get(`/dashboard/login?next=${encodeURIComponent(next)}`);
      expect(again.statusCode, next).toBe(303);
      expect(again.headers.location, next).toBe(location);
    }
  });
});

describe("dashboard access", () => {
  it("shows a user only the projects they are a member of", async () => {
    const browser = await signedIn(outsider.pat);
    const home = await browser.get("/dashboard");
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain("No projects");
    expect((await browser.get(`/dashboard/${ref}/dev/runs`)).statusCode).toBe(404);
  });

  it("answers another project's run id as not found", async () => {
    const browser = await signedIn();
    const res = await browser.get(`/dashboard/${ref}/dev/runs/${otherRunId}`);
    expect(res.statusCode).toBe(404);
    expect(res.body).not.toContain(otherRunId.slice(4));
    expect((await browser.get(`/dashboard/${ref}/nope/runs`)).statusCode).toBe(404);
  });

  it("shows stored text escaped, under a CSP without inline script", async () => {
    const browser = await signedIn();
    const evil = "<script>alert(1)</script>";
    const run = await api.app.inject({ method: "POST", url: "/api/v1/tasks/hello/trigger", headers: api.devAuth, payload: { payload: { evil }, options: { tags: ['"><img src=x onerror=alert(1)>'] } } });
    const page = await browser.get(`/dashboard/${ref}/dev/runs/${run.json().id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain("<script>alert");
    expect(page.body).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(page.body).not.toContain("<img src=x");
    const list = await browser.get(`/dashboard/${ref}/dev/runs`);
    expect(list.body).not.toContain("<img src=x");
    const csp = String(page.headers["content-security-policy"]);
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(page.headers["x-frame-options"]).toBe("DENY");
  });

  it("serves its assets signed out, with ETags", async () => {
    const browser = new DashboardBrowser(api.app);
    const htmx = await browser.get("/dashboard/assets/htmx.min.js");
    expect(htmx.statusCode).toBe(200);
    expect(htmx.headers["content-type"]).toMatch(/javascript/);
    expect((await browser.get("/dashboard/assets/htmx.min.js", { "if-none-match": String(htmx.headers.etag) })).statusCode).toBe(304);
    expect((await browser.get("/dashboard/assets/dashboard.css")).headers["content-type"]).toMatch(/text\/css/);
    expect((await browser.get("/dashboard/assets/constructor")).statusCode).toBe(404);
  });
});
