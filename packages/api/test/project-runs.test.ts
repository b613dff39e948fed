import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";
import { bearer, createOtherProject, createPreviewBranch, createUserWithPat } from "./credentials-fixtures.ts";

let api: TestApi;
let pat: Record<string, string>;
const runs: Record<string, string> = {};

async function trigger(key: string, tag: string, headers: Record<string, string> = {}) {
  const res = await api.app.inject({ method: "POST", url: "/api/v1/tasks/hello/trigger", headers: { ...bearer(key), ...headers }, payload: { payload: 1, options: { tags: [tag] } } });
  return res.json().id as string;
}

beforeAll(async () => {
  api = await startTestApi();
  const env = api.project.environments;
  pat = bearer((await createUserWithPat(api, "runs@example.com", { memberOf: [api.project.projectRef] })).pat);
  await createPreviewBranch(api, api.project.projectRef, "feat-runs");
  runs.dev = await trigger(env.dev.secretKey, "dev");
  runs.prod = await trigger(env.prod.secretKey, "prod");
  runs.staging = await trigger(env.staging.secretKey, "staging");
  runs.branch = await trigger(env.preview.secretKey, "branch", { "x-trigger-branch": "feat-runs" });
  const other = await createOtherProject(api);
  runs.other = await trigger(other.environments.dev.secretKey, "other");
});
afterAll(async () => api?.close());

const list = (query: string, headers = pat) => api.app.inject({ method: "GET", url: `/api/v1/projects/${api.project.projectRef}/runs${query}`, headers });
const ids = (body: { data: { id: string }[] }) => body.data.map((r) => r.id).sort();

describe("GET /api/v1/projects/{ref}/runs with a PAT", () => {
  it("lists the runs of the environments named in filter[env], with each run's env", async () => {
    const res = await list("?filter[env]=dev,prod");
    expect(res.statusCode).toBe(200);
    expect(ids(res.json())).toEqual([runs.dev, runs.prod].sort());
    const envNames = res.json().data.map((r: { env: { name: string } }) => r.env.name).sort();
    expect(envNames).toEqual(["dev", "prod"]);
    expect(ids((await list("?filter[env]=stg")).json())).toEqual([runs.staging]);
    // Repeating the parameter names several environments too.
    expect(ids((await list("?filter[env]=dev&filter[env]=prod")).json()).sort()).toEqual(ids(res.json()).sort());
  });

  it("selects a preview branch with the branch header", async () => {
    expect(ids((await list("?filter[env]=preview", { ...pat, "x-service-branch": "feat-runs" })).json())).toEqual([runs.branch]);
    expect(ids((await list("?filter[env]=preview")).json())).toEqual([]);
    expect((await list("?filter[env]=preview", { ...pat, "x-service-branch": "nope" })).statusCode).toBe(404);
  });

  it("applies the run filters of GET /api/v1/runs", async () => {
    expect(ids((await list("?filter[env]=dev,prod&filter[tag]=prod")).json())).toEqual([runs.prod]);
  });

  it("answers a missing or unknown filter[env] with 400, not 500", async () => {
    const missing = await list("");
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toMatch(/filter\[env\] is required/);
    const unknown = await list("?filter[env]=dev,qa");
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toMatch(/"qa" is not an environment/);
  });

  it("refuses non-members with 403 and secret keys with 401", async () => {
    const outsider = bearer((await createUserWithPat(api, "outsider-runs@example.com")).pat);
    expect((await list("?filter[env]=dev", outsider)).statusCode).toBe(403);
    expect((await list("?filter[env]=dev", bearer(api.project.environments.dev.secretKey))).statusCode).toBe(401);
  });
});
