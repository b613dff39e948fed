// Retention as operators and API clients meet it: `svc retention set|show`, and what a deleted
// run's id answers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBranch, FakeClock, fireAllDue, runRetention } from "@svc/runtime/engine";
import { startTestApi, TEST_ENCRYPTION_KEY, type TestApi } from "./harness.ts";
import { runCli } from "../src/cli/run.ts";
import { triggerTask } from "./runs-fixtures.ts";

const DAY = 86_400_000;
const clock = new FakeClock(new Date("2026-05-01T00:00:00Z"));
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ clock });
});
afterAll(async () => api?.close());

async function svc(args: string[]) {
  let stdout = "";
  let stderr = "";
  const env = { DATABASE_URL: api.db.url, SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, SVC_RUNTIME_FILE: "/nonexistent/runtime.json" };
  const code = await runCli(args, env, { stdout: (t) => (stdout += t + "\n"), stderr: (t) => (stderr += t + "\n") }, clock);
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

describe("svc retention", () => {
  it("sets an environment's retention, a branch's, back to the default, and shows them", async () => {
    const ref = api.project.projectRef;
    await createBranch(api.db.pool, ref, "feature-y");
    expect((await svc(["retention", "set", "--project", ref, "--env", "prod", "90", "--json"])).json()).toMatchObject({ environment: "prod", days: 90 });
    expect((await svc(["retention", "set", "--project", ref, "--env", "preview", "7"])).stdout).toContain("keeps finished runs for 7 days");
    expect((await svc(["retention", "set", "--project", ref, "--env", "dev", "0"])).stdout).toContain("keeps finished runs forever");
    expect((await svc(["retention", "set", "--project", ref, "--env", "preview", "--branch", "feature-y", "3", "--json"])).json()).toMatchObject({ branch: "feature-y", days: 3 });
    expect((await svc(["retention", "set", "--project", ref, "--env", "preview", "--branch", "feature-y", "default", "--json"])).json()).toMatchObject({ days: null });

    const shown = (await svc(["retention", "show", "--project", ref, "--json"])).json();
    expect(shown.environments.map((e: { environment: string; branch?: string; days: number | null }) => [e.branch ?? e.environment, e.days])).toEqual([
      ["dev", 0],
      ["staging", null],
      ["prod", 90],
      ["preview", 7],
      ["feature-y", null],
    ]);
    expect(shown.environments[4].previewDays).toBe(7);
    const text = (await svc(["retention", "show", "--project", ref])).stdout;
    expect(text).toMatch(/staging\s+default \(the workers' RUN_RETENTION_DAYS, 30 unless set\)/);
    expect(text).toMatch(/preview\/feature-y\s+7 days \(as preview\)/);
    expect(text).toMatch(/dev\s+forever/);
  });

  it("refuses days that are not whole days in range (exit 2), and an unknown project or branch (exit 1)", async () => {
    const ref = api.project.projectRef;
    for (const bad of ["-1", "1.5", "thirty", "36501"]) expect((await svc(["retention", "set", "--project", ref, "--env", "dev", bad])).code, bad).toBe(2);
    expect((await svc(["retention", "set", "--project", ref, "--env", "test", "5"])).code).toBe(2);
    expect((await svc(["retention", "set", "--project", ref, "--env", "dev", "--branch", "x", "5"])).code).toBe(2);
    expect((await svc(["retention", "set", "--project", "proj_nope", "--env", "dev", "5"])).code).toBe(1);
    const missing = await svc(["retention", "set", "--project", ref, "--env", "preview", "--branch", "no-such-branch", "5"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no live preview branch named no-such-branch");
  });
});

describe("a deleted run", () => {
  it("answers 404 Run not found", async () => {
    await svc(["retention", "set", "--project", api.project.projectRef, "--env", "dev", "default"]);
    const id = await triggerTask(api, { payload: { x: 1 } });
    await api.db.pool.query(`UPDATE runs SET status = 'COMPLETED', finished_at = $2 WHERE id = $1`, [id, clock.now()]);
    const retrieve = () => api.app.inject({ method: "GET", url: `/api/v3/runs/${id}`, headers: api.devAuth });
    expect((await retrieve()).statusCode).toBe(200);
    clock.advance(31 * DAY);
    await fireAllDue(api.engine, clock.now(), [runRetention({ defaultDays: 30, intervalMs: 600_000 })]);
    const gone = await retrieve();
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toEqual({ error: "Run not found" });
  });
});
