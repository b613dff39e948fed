import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEnvironmentVariables, type ProjectCredentials } from "@svc/runtime/engine";
import { startTestApi, type TestApi } from "./harness.ts";
import { bearer, createOtherProject, createPreviewBranch, createUserWithPat } from "./credentials-fixtures.ts";

let api: TestApi;
let other: ProjectCredentials;
let ref: string;
let keys: Record<"dev" | "staging" | "prod" | "preview", Record<string, string>>;
let pat: Record<string, string>;
let outsiderPat: Record<string, string>;
let featAId: string;

beforeAll(async () => {
  api = await startTestApi();
  ref = api.project.projectRef;
  const env = api.project.environments;
  keys = {
    dev: bearer(env.dev.secretKey),
    staging: bearer(env.staging.secretKey),
    prod: bearer(env.prod.secretKey),
    preview: bearer(env.preview.secretKey),
  };
  other = await createOtherProject(api);
  pat = bearer((await createUserWithPat(api, "member@example.com", { memberOf: [ref] })).pat);
  outsiderPat = bearer((await createUserWithPat(api, "outsider@example.com", { memberOf: [other.projectRef] })).pat);
  featAId = await createPreviewBranch(api, ref, "feat-a");
  await createPreviewBranch(api, ref, "feat-b");
});
afterAll(async () => api?.close());

const url = (env: string, rest = "", project = ref) => `/api/v1/projects/${project}/envvars/${env}${rest}`;

function call(method: "GET" | "POST" | "PUT" | "DELETE", path: string, headers: Record<string, string>, payload?: object) {
  return api.app.inject({ method, url: path, headers, ...(payload ? { payload } : {}) });
}

describe("environment variable operations", () => {
  it("creates, lists, retrieves, updates and deletes a variable with a secret key", async () => {
    expect((await call("POST", url("dev"), keys.dev, { name: "GREETING", value: "hello" })).json()).toEqual({ success: true });
    expect((await call("GET", url("dev"), keys.dev)).json()).toContainEqual({ name: "GREETING", value: "hello", isSecret: false });
    expect((await call("GET", url("dev", "/GREETING"), keys.dev)).json()).toEqual({ name: "GREETING", value: "hello", isSecret: false });
    expect((await call("PUT", url("dev", "/GREETING"), keys.dev, { value: "hi" })).json()).toEqual({ success: true });
    expect((await call("GET", url("dev", "/GREETING"), keys.dev)).json().value).toBe("hi");
    expect((await call("POST", url("dev", "/GREETING"), keys.dev, { value: "hey" })).statusCode).toBe(200);
    expect((await call("GET", url("dev", "/GREETING"), keys.dev)).json().value).toBe("hey");
    expect((await call("DELETE", url("dev", "/GREETING"), keys.dev)).json()).toEqual({ success: true });
    const gone = await call("GET", url("dev", "/GREETING"), keys.dev);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error).toBe("Environment variable not found");
  });

  it("does all six operations with a PAT of a project member, on any environment", async () => {
    expect((await call("POST", url("prod", "/import"), pat, { variables: { A: "1", B: "2" } })).json()).toEqual({ success: true });
    expect((await call("POST", url("prod"), pat, { name: "C", value: "3" })).statusCode).toBe(200);
    expect((await call("PUT", url("prod", "/C"), pat, { value: "33" })).statusCode).toBe(200);
    expect((await call("GET", url("prod", "/C"), pat)).json()).toEqual({ name: "C", value: "33", isSecret: false });
    expect((await call("DELETE", url("prod", "/A"), pat)).statusCode).toBe(200);
    const list = (await call("GET", url("prod"), pat)).json();
    expect(list).toEqual([
      { name: "B", value: "2", isSecret: false },
      { name: "C", value: "33", isSecret: false },
    ]);
    // The prod key sees what the PAT wrote; the dev key does not reach prod.
    expect((await call("GET", url("prod"), keys.prod)).json()).toEqual(list);
  });

  it("answers 404 for updating or deleting a variable that does not exist", async () => {
    expect((await call("PUT", url("dev", "/NOPE"), keys.dev, { value: "x" })).statusCode).toBe(404);
    expect((await call("DELETE", url("dev", "/NOPE"), keys.dev)).statusCode).toBe(404);
  });

  it("accepts stg as staging and refuses unknown environments with 400", async () => {
    await call("POST", url("staging"), keys.staging, { name: "S", value: "1" });
    expect((await call("GET", url("stg", "/S"), keys.staging)).json().value).toBe("1");
    const bad = await call("GET", url("qa"), pat);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/env must be one of dev, staging, prod, preview/);
  });
});

describe("upload override semantics", () => {
  it("refuses existing names without override, naming them, and writes nothing", async () => {
    await call("POST", url("dev", "/import"), keys.dev, { variables: { U1: "a", U2: "b" } });
    const res = await call("POST", url("dev", "/import"), keys.dev, { variables: { U2: "x", U3: "y" } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/already set.*U2.*override/);
    expect(res.json().variableErrors).toEqual([{ key: "U2", error: "Variable already set" }]);
    expect((await call("GET", url("dev", "/U3"), keys.dev)).statusCode).toBe(404);
    expect((await call("GET", url("dev", "/U2"), keys.dev)).json().value).toBe("b");
  });

  it("replaces existing values with override: true", async () => {
    await call("POST", url("dev", "/import"), keys.dev, { variables: { O1: "a" } });
    expect((await call("POST", url("dev", "/import"), keys.dev, { variables: { O1: "z", O2: "y" }, override: true })).statusCode).toBe(200);
    expect((await call("GET", url("dev", "/O1"), keys.dev)).json().value).toBe("z");
    expect((await call("GET", url("dev", "/O2"), keys.dev)).json().value).toBe("y");
  });

  it("imports a variable named __proto__ like any other name (single create stores it too)", async () => {
    const res = await api.app.inject({
      method: "POST",
      url: url("staging", "/import"),
      headers: { ...keys.staging, "content-type": "application/json" },
      payload: '{"variables":{"__proto__":"proto value","PLAIN":"plain value"}}',
    });
    expect(res.json()).toEqual({ success: true });
    expect((await call("GET", url("staging", "/__proto__"), keys.staging)).json().value).toBe("proto value");
    expect((await call("GET", url("staging", "/PLAIN"), keys.staging)).json().value).toBe("plain value");
    const notText = await api.app.inject({
      method: "POST",
      url: url("staging", "/import"),
      headers: { ...keys.staging, "content-type": "application/json" },
      payload: '{"variables":{"__proto__":5}}',
    });
    expect(notText.statusCode).toBe(400);
    expect(notText.json().error).toMatch(/__proto__: expected a string/);
  });

  it("lets create always override", async () => {
    await call("POST", url("dev"), keys.dev, { name: "CR", value: "1" });
    expect((await call("POST", url("dev"), keys.dev, { name: "CR", value: "2" })).statusCode).toBe(200);
    expect((await call("GET", url("dev", "/CR"), keys.dev)).json().value).toBe("2");
  });
});

describe("secrets, reserved names and bad input", () => {
  it("redacts secret values on read but keeps them for runs", async () => {
    await call("POST", url("dev"), keys.dev, { name: "TOKEN", value: "s3cret-value", isSecret: true });
    expect((await call("GET", url("dev", "/TOKEN"), keys.dev)).json()).toEqual({ name: "TOKEN", value: "<redacted>", isSecret: true });
    expect((await call("GET", url("dev"), keys.dev)).json()).toContainEqual({ name: "TOKEN", value: "<redacted>", isSecret: true });
    // Overriding a secret's value without isSecret keeps it secret.
    await call("POST", url("dev"), keys.dev, { name: "TOKEN", value: "s3cret-2" });
    expect((await call("GET", url("dev", "/TOKEN"), keys.dev)).json().isSecret).toBe(true);
    const vars = await loadEnvironmentVariables(api.db.pool, api.engine.secrets, api.project.environments.dev.id);
    expect(vars.TOKEN).toBe("s3cret-2");
  });

  it("stores values encrypted: the plaintext is nowhere in the table", async () => {
    await call("POST", url("dev"), keys.dev, { name: "PLAIN_CHECK", value: "find-me-if-you-can-42" });
    const { rows } = await api.db.pool.query("SELECT * FROM environment_variables WHERE name = 'PLAIN_CHECK'");
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain("find-me-if-you-can-42");
    const dump = await api.db.pool.query("SELECT string_agg(t::text, '') AS all FROM environment_variables t");
    expect(dump.rows[0].all).not.toContain("find-me-if-you-can-42");
  });

  it("refuses reserved names with a clear 400", async () => {
    for (const name of ["SERVICE_SECRET_KEY", "SERVICE_API_URL"]) {
      const res = await call("POST", url("dev"), keys.dev, { name, value: "x" });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toContain(`${name} is reserved`);
    }
    const upload = await call("POST", url("dev", "/import"), keys.dev, { variables: { OK: "1", SERVICE_API_URL: "x" } });
    expect(upload.statusCode).toBe(400);
    expect((await call("GET", url("dev", "/OK"), keys.dev)).statusCode).toBe(404);
  });

  it("refuses invalid names and malformed bodies with 400", async () => {
    for (const name of ["1ABC", "WITH-DASH", "has space", ""]) {
      const res = await call("POST", url("dev"), keys.dev, { name, value: "x" });
      expect(res.statusCode, name).toBe(400);
    }
    expect((await call("POST", url("dev"), keys.dev, { name: "N" })).statusCode).toBe(400);
    expect((await call("POST", url("dev", "/import"), keys.dev, { variables: { A: 1 } })).statusCode).toBe(400);
    const empty = await call("POST", url("dev", "/import"), keys.dev, { variables: {} });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toMatch(/at least one variable/);
    expect((await call("PUT", url("dev", "/X"), keys.dev, { value: 5 })).statusCode).toBe(400);
    expect((await api.app.inject({ method: "PUT", url: url("dev", "/X"), headers: { ...keys.dev, "content-type": "application/json" }, payload: "{bad" })).statusCode).toBe(400);
  });

  it("answers NUL characters in the path with 400, not 500", async () => {
    expect((await call("GET", url("dev", "/A%00B"), keys.dev)).statusCode).toBe(400);
    expect((await call("DELETE", url("dev", "/A%00B"), pat)).statusCode).toBe(400);
    expect((await call("GET", url("dev", "", "proj%00x"), pat)).statusCode).toBe(400);
    expect((await call("POST", url("dev"), keys.dev, { name: "A\u0000B", value: "x" })).statusCode).toBe(400);
  });

  it("refuses values a run's process.env could not hold as given (a NUL, half a surrogate pair)", async () => {
    // A NUL ends the value in process.env ("a\u0000b" reads as "a"); the other is stored as U+FFFD.
    // The stored-text rule answers first, as on every field of every JSON body.
    for (const [value, reason] of [["a\u0000b", "must not contain NUL characters"], ["half \ud800 a pair", "must be valid Unicode (it holds half a surrogate pair)"]] as const) {
      const created = await call("POST", url("dev"), keys.dev, { name: "ODD", value });
      expect(created.statusCode).toBe(400);
      expect(created.json().error).toBe(`Invalid request body: value: ${reason}`);
      expect((await call("POST", url("dev", "/import"), keys.dev, { variables: { ODD: value } })).statusCode).toBe(400);
      expect((await call("PUT", url("dev", "/GREETING"), keys.dev, { value })).statusCode).toBe(400);
    }
    expect((await call("GET", url("dev", "/ODD"), keys.dev)).statusCode).toBe(404);
  });
});

describe("who may touch which environment", () => {
  it("refuses a secret key for another environment or project with 403", async () => {
    const wrongEnv = await call("GET", url("prod"), keys.dev);
    expect(wrongEnv.statusCode).toBe(403);
    expect(wrongEnv.json().error).toMatch(/dev environment, not prod/);
    expect((await call("GET", url("dev", "", other.projectRef), keys.dev)).statusCode).toBe(403);
    expect((await call("POST", url("dev", "", other.projectRef), keys.dev, { name: "X", value: "1" })).statusCode).toBe(403);
  });

  it("refuses a PAT of a non-member with 403, for existing and unknown projects alike", async () => {
    const res = await call("GET", url("dev"), outsiderPat);
    expect(res.statusCode).toBe(403);
    expect((await call("GET", url("dev", "", "proj_doesnotexist"), outsiderPat)).statusCode).toBe(403);
  });

  it("refuses missing, unknown and revoked-looking credentials with 401", async () => {
    expect((await call("GET", url("dev"), {})).statusCode).toBe(401);
    expect((await call("GET", url("dev"), bearer("svc_dev_unknown"))).statusCode).toBe(401);
    expect((await call("GET", url("dev"), bearer("svc_pat_unknown"))).statusCode).toBe(401);
  });

  it("lets a PAT reach a project through organisation membership", async () => {
    const viaOrg = bearer((await createUserWithPat(api, "org-member@example.com", { memberOf: [other.projectRef], viaOrganization: true })).pat);
    expect((await call("GET", url("dev", "", other.projectRef), viaOrg)).statusCode).toBe(200);
    expect((await call("GET", url("dev"), viaOrg)).statusCode).toBe(403);
  });
});

describe("preview branches", () => {
  it("keeps each branch's variables apart, selected by x-service-branch or x-trigger-branch", async () => {
    await call("POST", url("preview"), { ...pat, "x-trigger-branch": "feat-a" }, { name: "X", value: "a" });
    await call("POST", url("preview", "/import"), { ...pat, "x-service-branch": "feat-b" }, { variables: { X: "b" } });
    expect((await call("GET", url("preview", "/X"), { ...pat, "x-service-branch": "feat-a" })).json().value).toBe("a");
    expect((await call("GET", url("preview", "/X"), { ...pat, "x-trigger-branch": "feat-b" })).json().value).toBe("b");
    // No header: the preview environment itself, which has no X.
    expect((await call("GET", url("preview", "/X"), pat)).statusCode).toBe(404);
    // The secret key of preview targets branches the same way.
    expect((await call("GET", url("preview", "/X"), { ...keys.preview, "x-trigger-branch": "feat-b" })).json().value).toBe("b");
  });

  it("prefers x-service-branch when both headers are sent, and sanitises refs/heads/", async () => {
    const both = { ...pat, "x-service-branch": "feat-a", "x-trigger-branch": "feat-b" };
    expect((await call("GET", url("preview", "/X"), both)).json().value).toBe("a");
    expect((await call("GET", url("preview", "/X"), { ...keys.preview, "x-service-branch": "feat-a", "x-trigger-branch": "feat-b" })).json().value).toBe("a");
    expect((await call("GET", url("preview", "/X"), { ...pat, "x-service-branch": "refs/heads/feat-b" })).json().value).toBe("b");
  });

  it("merges the parent preview environment's values under a branch's", async () => {
    await call("POST", url("preview", "/import"), keys.preview, { variables: { SHARED: "parent", X: "parent-x" } });
    const list = (await call("GET", url("preview"), { ...pat, "x-service-branch": "feat-a" })).json();
    expect(list).toEqual([
      { name: "SHARED", value: "parent", isSecret: false },
      { name: "X", value: "a", isSecret: false },
    ]);
    expect(await loadEnvironmentVariables(api.db.pool, api.engine.secrets, featAId)).toEqual({ SHARED: "parent", X: "a" });
    // Deleting on the branch removes only the branch's value; the parent's shows through again.
    await call("DELETE", url("preview", "/X"), { ...pat, "x-service-branch": "feat-a" });
    expect((await call("GET", url("preview", "/X"), { ...pat, "x-service-branch": "feat-a" })).json().value).toBe("parent-x");
    expect((await call("GET", url("preview", "/X"), pat)).json().value).toBe("parent-x");
  });

  it("answers an unknown branch with 404 for a PAT and 401 for the preview key", async () => {
    const res = await call("GET", url("preview"), { ...pat, "x-service-branch": "nope" });
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toBe("Branch not found");
    expect((await call("GET", url("preview"), { ...keys.preview, "x-service-branch": "nope" })).statusCode).toBe(401);
  });

  it("ignores the branch header on dev, staging and prod", async () => {
    await call("POST", url("dev"), keys.dev, { name: "IGNORED", value: "dev-value" });
    for (const headers of [{ ...keys.dev, "x-service-branch": "feat-a" }, { ...pat, "x-trigger-branch": "nope" }]) {
      const res = await call("GET", url("dev", "/IGNORED"), headers);
      expect(res.statusCode).toBe(200);
      expect(res.json().value).toBe("dev-value");
    }
    expect((await call("GET", url("prod"), { ...keys.prod, "x-service-branch": "whatever" })).statusCode).toBe(200);
    expect((await call("GET", url("staging"), { ...pat, "x-service-branch": "whatever" })).statusCode).toBe(200);
  });
});

describe("OpenAPI", () => {
  it("documents the env var routes with their parameters", async () => {
    const doc = (await api.app.inject({ method: "GET", url: "/api/openapi.json" })).json();
    const item = doc.paths["/api/v1/projects/{projectRef}/envvars/{env}/{name}"];
    expect(Object.keys(item).sort()).toEqual(["delete", "get", "post", "put"]);
    expect(item.put.parameters.map((p: { name: string }) => p.name)).toEqual(["projectRef", "env", "name"]);
    expect(item.put.requestBody.content["application/json"].schema.properties.value.type).toBe("string");
    expect(doc.paths["/api/v1/projects/{projectRef}/runs"].get.parameters.map((p: { name: string }) => p.name)).toContain("filter[env]");
  });
});
