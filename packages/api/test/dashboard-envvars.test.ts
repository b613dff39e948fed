import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";
import { bearer, createOtherProject, createPreviewBranch, createUserWithPat } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";

let api: TestApi;
let ref: string;
let member: string;
let outsider: string;
const SECRET = "s3cr3t-value-never-shown";
const PARENT_SECRET = "parent-secret-value-never-shown";
const EVIL = "<script>alert(1)</script>";

function setVariables(env: string, headers: Record<string, string>, variables: Record<string, string>, isSecret = false) {
  return api.app.inject({ method: "POST", url: `/api/v1/projects/${ref}/envvars/${env}/import`, headers, payload: { variables, isSecret, override: true } });
}

beforeAll(async () => {
  api = await startTestApi();
  ref = api.project.projectRef;
  member = (await createUserWithPat(api, "member@example.com", { memberOf: [ref] })).pat;
  const other = await createOtherProject(api);
  outsider = (await createUserWithPat(api, "outsider@example.com", { memberOf: [other.projectRef] })).pat;
  await createPreviewBranch(api, ref, "feat-a");
  const pat = bearer(member);
  for (const res of [
    await setVariables("dev", pat, { GREETING: "hello", EVIL, LONG: `first line\n${"x".repeat(200)}` }),
    await setVariables("dev", pat, { API_TOKEN: SECRET }, true),
    await setVariables("prod", pat, { PROD_ONLY: "prod-value" }),
    await setVariables("preview", pat, { SHARED: "parent", X: "parent-x" }),
    await setVariables("preview", pat, { PARENT_TOKEN: PARENT_SECRET }, true),
    await setVariables("preview", { ...pat, "x-service-branch": "feat-a" }, { X: "branch-x", OWN: "mine" }),
  ]) {
    expect(res.json()).toEqual({ success: true });
  }
});
afterAll(async () => api?.close());

async function signedIn(pat = member) {
  const browser = new DashboardBrowser(api.app);
  expect((await browser.signIn(pat)).statusCode).toBe(303);
  return browser;
}

/** The rows of the page's table as [name, value cell text] (tags stripped). */
function rows(body: string): string[][] {
  const tbody = /<tbody>([\s\S]*)<\/tbody>/.exec(body)![1]!;
  return [...tbody.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) => [...row[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((cell) => cell[1]!.replace(/<[^>]+>/g, "").trim()));
}

describe("dashboard environment variables page", () => {
  it("lists the environment's variables with their values, as the API lists them", async () => {
    const browser = await signedIn();
    const res = await browser.get(`/dashboard/${ref}/dev/envvars`);
    expect(res.statusCode).toBe(200);
    const listed = (await api.app.inject({ method: "GET", url: `/api/v1/projects/${ref}/envvars/dev`, headers: bearer(member) })).json() as { name: string }[];
    expect(rows(res.body).map((row) => row[0])).toEqual(listed.map((v) => v.name));
    expect(res.body).toContain("<code>hello</code>");
    // A long, multi-line value shows its first line, the whole of it on demand.
    expect(res.body).toContain("<summary><code>first line</code>…</summary>");
    expect(res.body).toContain(`first line\n${"x".repeat(200)}</pre>`);
    expect(res.body).toContain("4 variables, 1 secret");
    // Other environments' variables are not shown.
    expect(res.body).not.toContain("PROD_ONLY");
    expect((await browser.get(`/dashboard/${ref}/prod/envvars`)).body).toContain("prod-value");
  });

  it("shows a stored value as text", async () => {
    const body = (await (await signedIn()).get(`/dashboard/${ref}/dev/envvars`)).body;
    expect(body).not.toContain("<script>alert");
    expect(body).toContain("<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>");
  });

  it("never sends a secret's value, not even its redacted placeholder", async () => {
    const browser = await signedIn();
    const dev = await browser.get(`/dashboard/${ref}/dev/envvars`);
    expect(dev.body).not.toContain(SECRET);
    expect(dev.body).not.toContain("&lt;redacted&gt;");
    expect(rows(dev.body).find((row) => row[0] === "API_TOKEN")).toEqual(["API_TOKEN", "secret redacted"]);
    for (const path of ["preview/envvars", "preview/envvars?branch=feat-a"]) {
      const res = await browser.get(`/dashboard/${ref}/${path}`);
      expect(res.statusCode).toBe(200);
      expect(res.body, path).not.toContain(PARENT_SECRET);
    }
  });

  it("shows a branch what the API shows it: the preview values under its own, and where each comes from", async () => {
    const browser = await signedIn();
    const res = await browser.get(`/dashboard/${ref}/preview/envvars?branch=feat-a`);
    expect(res.statusCode).toBe(200);
    const listed = (await api.app.inject({ method: "GET", url: `/api/v1/projects/${ref}/envvars/preview`, headers: { ...bearer(member), "x-service-branch": "feat-a" } })).json();
    expect(listed.map((v: { name: string }) => v.name)).toEqual(["OWN", "PARENT_TOKEN", "SHARED", "X"]);
    expect(rows(res.body)).toEqual([
      ["OWN", "mine", "this branch"],
      ["PARENT_TOKEN", "secret redacted", "preview (inherited)"],
      ["SHARED", "parent", "preview (inherited)"],
      ["X", "branch-x", "this branch (overrides preview)"],
    ]);
    expect(res.body).toContain("Branch <strong>feat-a</strong> sees the preview environment");
    // The preview environment itself has only its own variables.
    const preview = await browser.get(`/dashboard/${ref}/preview/envvars`);
    expect(rows(preview.body)).toEqual([
      ["PARENT_TOKEN", "secret redacted"],
      ["SHARED", "parent"],
      ["X", "parent-x"],
    ]);
    expect(preview.body).toContain("Every preview branch inherits these variables");
  });

  it("answers an unknown branch, environment or project with a 404 page", async () => {
    const browser = await signedIn();
    expect((await browser.get(`/dashboard/${ref}/preview/envvars?branch=nope`)).statusCode).toBe(404);
    expect((await browser.get(`/dashboard/${ref}/qa/envvars`)).statusCode).toBe(404);
    const outside = await (await signedIn(outsider)).get(`/dashboard/${ref}/dev/envvars`);
    expect(outside.statusCode).toBe(404);
    expect(outside.body).not.toContain("GREETING");
  });
});
