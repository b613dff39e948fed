import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, TEST_ENCRYPTION_KEY, type TestApi } from "./harness.ts";
import { runCli } from "../src/cli/run.ts";
import { createOtherProject } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

async function svc(args: string[]) {
  let stdout = "";
  let stderr = "";
  const env = { DATABASE_URL: api.db.url, SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, SVC_RUNTIME_FILE: "/nonexistent/runtime.json" };
  const code = await runCli(args, env, { stdout: (t) => (stdout += t + "\n"), stderr: (t) => (stderr += t + "\n") });
  return { code, stdout, stderr };
}

describe("svc access", () => {
  it("makes the user, the membership of the only project and a PAT that signs in to the dashboard, in one step", async () => {
    const res = await svc(["access", "Ada@Example.com", "--json"]);
    expect(res.code, res.stderr).toBe(0);
    const body = JSON.parse(res.stdout);
    expect(body).toMatchObject({ user: "ada@example.com", member: `project ${api.project.projectRef}`, name: "dashboard" });
    const browser = new DashboardBrowser(api.app);
    expect((await browser.signIn(body.token)).statusCode).toBe(303);
    expect((await browser.get(`/dashboard/${api.project.projectRef}/dev/runs`)).statusCode).toBe(200);
    // Again: the same user, a second token, both valid.
    const again = JSON.parse((await svc(["access", "ada@example.com", "--json", "--name", "laptop"])).stdout);
    expect(again.token).not.toBe(body.token);
    expect(again.name).toBe("laptop");
    const { rows } = await api.db.pool.query(`SELECT count(*)::int AS n FROM users WHERE email = 'ada@example.com'`);
    expect(rows[0].n).toBe(1);
    const text = await svc(["access", "ada@example.com"]);
    expect(text.stdout).toMatch(/svc_pat_\S+/);
    expect(text.stdout).toContain("/dashboard");
  });

  it("asks which project when there are several, and refuses unknown ones", async () => {
    const other = await createOtherProject(api, "second");
    const ambiguous = await svc(["access", "bob@example.com"]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/pass --project/);
    const chosen = await svc(["access", "bob@example.com", "--project", other.projectRef, "--json"]);
    expect(chosen.code, chosen.stderr).toBe(0);
    expect(JSON.parse(chosen.stdout).member).toBe(`project ${other.projectRef}`);
    expect((await svc(["access", "bob@example.com", "--project", "proj_nope"])).code).not.toBe(0);
    expect((await svc(["access", "bob@example.com", "--project", "x", "--org", "y"])).code).toBe(2);
  });
});
