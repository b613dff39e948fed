import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadMigrations } from "@svc/runtime/db";
import { findEnvironmentBySecretKey } from "@svc/runtime/engine";
import { createTestDatabase } from "@svc/runtime/testing";
import { startTestApi, TEST_ENCRYPTION_KEY, type TestApi } from "./harness.ts";
import { runCli } from "../src/cli/run.ts";
import { bearer } from "./credentials-fixtures.ts";
import { freePort } from "../../../scripts/embedded-postgres.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const TSX = join(ROOT, "node_modules/.bin/tsx");
const MAIN = join(ROOT, "packages/cli/src/main.ts");

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  json(): any;
}

/** Runs `svc …` as the operator would: a separate process against the test database. */
function svc(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  const base: Record<string, string | undefined> = { ...process.env, DATABASE_URL: api.db.url, SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, SVC_RUNTIME_FILE: "/nonexistent/runtime.json" };
  const merged = Object.fromEntries(Object.entries({ ...base, ...env }).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv;
  return new Promise((resolve) => {
    execFile(TSX, [MAIN, ...args], { cwd: ROOT, env: merged, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) });
    });
  });
}

/** The same CLI in this process (argument errors need no separate process to be checked). */
async function svcInProcess(args: string[], databaseUrl = api.db.url): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const env = { DATABASE_URL: databaseUrl, SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, SVC_RUNTIME_FILE: "/nonexistent/runtime.json" };
  const code = await runCli(args, env, { stdout: (t) => (stdout += t + "\n"), stderr: (t) => (stderr += t + "\n") });
  return { code, stdout, stderr };
}

describe("svc setup", () => {
  it("prints the default project's ref and four working secret keys, the same on every run", { timeout: 60_000 }, async () => {
    const first = await svc(["setup", "--json"]);
    expect(first.code).toBe(0);
    const body = first.json();
    expect(Object.keys(body)).toEqual(["projectRef", "environments"]);
    expect(body.projectRef).toBe(api.project.projectRef);
    expect(Object.keys(body.environments)).toEqual(["dev", "staging", "prod", "preview"]);
    expect(body.environments.dev).toEqual({ secretKey: expect.stringMatching(/^svc_dev_/) });
    expect(body.environments.staging.secretKey).toMatch(/^svc_stg_/);
    expect(body.environments.prod.secretKey).toMatch(/^svc_prod_/);
    expect(body.environments.preview.secretKey).toMatch(/^svc_preview_/);
    const env = await findEnvironmentBySecretKey(api.db.pool, body.environments.prod.secretKey, new Date());
    expect(env?.slug).toBe("prod");
    expect((await svc(["setup", "--json"])).json()).toEqual(body);
  });
});

describe("svc migrate", () => {
  it("applies every migration to an empty database, says which, and then that there is nothing left", { timeout: 60_000 }, async () => {
    const db = await createTestDatabase({ empty: true });
    try {
      const names = (await loadMigrations()).map((m) => m.name);
      const first = await svcInProcess(["migrate", "--json"], db.url);
      expect(first.code).toBe(0);
      const body = JSON.parse(first.stdout);
      expect(body.applied).toEqual(names);
      expect(body.functions.length).toBeGreaterThan(0);
      expect(body.latest).toBe(names[names.length - 1]);
      const again = await svcInProcess(["migrate"], db.url);
      expect(again.code).toBe(0);
      expect(again.stdout.trim()).toBe(`The schema is up to date (${names[names.length - 1]}).`);
    } finally {
      await db.drop();
    }
  });
});

describe("provisioning a tenant", () => {
  it("creates an organisation, a project, a user with a PAT and a membership the API honours", { timeout: 120_000 }, async () => {
    expect((await svc(["orgs", "create", "acme", "--name", "Acme Inc", "--json"])).json()).toMatchObject({ slug: "acme", name: "Acme Inc" });
    const project = await svc(["projects", "create", "--org", "acme", "--name", "Web Shop", "--json"]);
    expect(project.code).toBe(0);
    const { projectRef, environments, slug } = project.json();
    expect(projectRef).toMatch(/^proj_/);
    expect(slug).toBe("web-shop");
    expect(Object.keys(environments)).toEqual(["dev", "staging", "prod", "preview"]);

    expect((await svc(["users", "create", "Ada@Example.com", "--json"])).json()).toMatchObject({ email: "ada@example.com" });
    const pat = await svc(["pats", "create", "--user", "ada@example.com", "--name", "laptop", "--json"]);
    const token = pat.json().token as string;
    expect(token).toMatch(/^svc_pat_/);

    const url = `/api/v1/projects/${projectRef}/envvars/prod`;
    expect((await api.app.inject({ method: "GET", url, headers: bearer(token) })).statusCode).toBe(403);
    expect((await svc(["members", "add", "--project", projectRef, "--user", "ada@example.com", "--json"])).json()).toEqual({
      user: "ada@example.com",
      projectRef,
      added: true,
    });
    expect((await api.app.inject({ method: "GET", url, headers: bearer(token) })).statusCode).toBe(200);
    expect((await api.app.inject({ method: "GET", url, headers: bearer(environments.prod.secretKey) })).statusCode).toBe(200);
  });

  it("lists a user's PATs and revokes one, which then gets 401 at once", { timeout: 60_000 }, async () => {
    const ref = api.project.projectRef;
    expect((await svcInProcess(["users", "create", "grace@example.com"])).code).toBe(0);
    expect((await svcInProcess(["members", "add", "--project", ref, "--user", "grace@example.com"])).code).toBe(0);
    const made = await svcInProcess(["pats", "create", "--user", "grace@example.com", "--name", "ci", "--json"]);
    const token = JSON.parse(made.stdout).token as string;
    await svcInProcess(["pats", "create", "--user", "grace@example.com", "--name", "laptop"]);
    const url = `/api/v1/projects/${ref}/envvars/dev`;
    expect((await api.app.inject({ method: "GET", url, headers: bearer(token) })).statusCode).toBe(200);

    const listed = JSON.parse((await svcInProcess(["pats", "list", "--user", "grace@example.com", "--json"])).stdout);
    expect(listed.user).toBe("grace@example.com");
    expect(listed.tokens.map((t: { name: string }) => t.name)).toEqual(["ci", "laptop"]);
    expect(JSON.stringify(listed)).not.toContain(token); // only previews, never the token
    const ci = listed.tokens[0];

    const revoked = await svcInProcess(["pats", "revoke", "--user", "grace@example.com", "--id", String(ci.id), "--json"]);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({ user: "grace@example.com", id: ci.id, revoked: true, changed: true });
    expect((await api.app.inject({ method: "GET", url, headers: bearer(token) })).statusCode).toBe(401);
    const after = JSON.parse((await svcInProcess(["pats", "list", "--user", "grace@example.com", "--json"])).stdout);
    expect(after.tokens[0].revokedAt).toBeTypeOf("string");
    expect(after.tokens[1].revokedAt).toBeUndefined();

    // Again: nothing changes. Another user's token id, an unknown id, a bad id: clear failures.
    expect(JSON.parse((await svcInProcess(["pats", "revoke", "--user", "grace@example.com", "--id", String(ci.id), "--json"])).stdout).changed).toBe(false);
    const unknown = await svcInProcess(["pats", "revoke", "--user", "grace@example.com", "--id", "999999"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/has no personal access token 999999/);
    const bad = await svcInProcess(["pats", "revoke", "--user", "grace@example.com", "--id", "abc"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--id must be a token id/);
  });

  it("creates, lists and archives preview branches", { timeout: 120_000 }, async () => {
    const ref = api.project.projectRef;
    const created = await svc(["branches", "create", "--project", ref, "refs/heads/feat-cli", "--json"]);
    expect(created.json()).toMatchObject({ projectRef: ref, branch: "feat-cli", created: true });
    const listed = (await svc(["branches", "list", "--project", ref, "--json"])).json();
    expect(listed.branches.map((b: { name: string }) => b.name)).toEqual(["feat-cli"]);
    const headers = { ...bearer(api.project.environments.preview.secretKey), "x-service-branch": "feat-cli" };
    expect((await api.app.inject({ method: "GET", url: `/api/v1/projects/${ref}/envvars/preview`, headers })).statusCode).toBe(200);
    expect((await svc(["branches", "archive", "--project", ref, "feat-cli", "--json"])).json()).toEqual({ projectRef: ref, branch: "feat-cli", archived: true });
    expect((await api.app.inject({ method: "GET", url: `/api/v1/projects/${ref}/envvars/preview`, headers })).statusCode).toBe(401);
    expect((await svc(["branches", "list", "--project", ref, "--json"])).json().branches).toEqual([]);
    const again = await svc(["branches", "archive", "--project", ref, "feat-cli"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/no live preview branch named feat-cli/);
  });

  it("rotates a key with a grace period and shows both keys until it ends", { timeout: 120_000 }, async () => {
    const ref = api.project.projectRef;
    const oldKey = api.project.environments.staging.secretKey;
    const rotated = (await svc(["keys", "rotate", "--project", ref, "--env", "staging", "--grace", "1h", "--json"])).json();
    expect(rotated.secretKey).toMatch(/^svc_stg_/);
    expect(new Date(rotated.previousKeysExpireAt).getTime()).toBeGreaterThan(Date.now() + 59 * 60_000);
    const shown = (await svc(["keys", "show", "--project", ref, "--json"])).json();
    expect(shown.environments.staging.secretKey).toBe(rotated.secretKey);
    expect(shown.environments.staging.keys.map((k: { secretKey: string }) => k.secretKey)).toEqual([rotated.secretKey, oldKey]);
    expect(shown.environments.staging.keys[1].expiresAt).toBe(rotated.previousKeysExpireAt);
    const url = `/api/v1/projects/${ref}/envvars/staging`;
    expect((await api.app.inject({ method: "GET", url, headers: bearer(oldKey) })).statusCode).toBe(200);

    // A zero grace period ends the old keys at once.
    const now = (await svc(["keys", "rotate", "--project", ref, "--env", "staging", "--grace", "0s", "--json"])).json();
    expect((await api.app.inject({ method: "GET", url, headers: bearer(rotated.secretKey) })).statusCode).toBe(401);
    expect((await api.app.inject({ method: "GET", url, headers: bearer(now.secretKey) })).statusCode).toBe(200);
  });
});

describe("svc keys show without --project", () => {
  it("shows the keys of the only project; with none or several, says what to do (exit 2)", { timeout: 60_000 }, async () => {
    const db = await createTestDatabase();
    try {
      const none = await svcInProcess(["keys", "show"], db.url);
      expect(none.code).toBe(2);
      expect(none.stderr).toMatch(/^error: there is no project yet: run `svc setup` \(or `svc dev`\) first/);

      const { projectRef, environments } = JSON.parse((await svcInProcess(["setup", "--json"], db.url)).stdout);
      const shown = await svcInProcess(["keys", "show"], db.url);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(new RegExp(`^Secret keys of ${projectRef}\n {2}dev {6}${environments.dev.secretKey}\n`));

      await svcInProcess(["orgs", "create", "acme"], db.url);
      const second = JSON.parse((await svcInProcess(["projects", "create", "--org", "acme", "--name", "Shop", "--json"], db.url)).stdout);
      const several = await svcInProcess(["keys", "show"], db.url);
      expect(several.code).toBe(2);
      expect(several.stderr).toMatch(new RegExp(`there are 2 projects: pass --project <ref> \\(.*${second.projectRef}.*\\)`));
    } finally {
      await db.drop();
    }
  });
});

describe("bad usage and failures", () => {
  it("exits with 2 and a clear message for bad arguments", { timeout: 60_000 }, async () => {
    const spawned = await svc(["keys", "rotate", "--project", "p", "--env", "qa"]);
    expect(spawned.code).toBe(2);
    expect(spawned.stderr).toMatch(/--env must be one of dev, staging, prod, preview\nusage: svc keys rotate/);
    const cases: [string[], RegExp][] = [
      [["frobnicate"], /unknown command "frobnicate"/],
      [["orgs", "create"], /missing <slug>/],
      [["orgs", "create", "a", "b"], /unexpected argument "b"/],
      [["projects", "create", "--org", "acme"], /--name is required/],
      [["keys", "rotate", "--project", "p", "--env", "dev", "--grace", "soon"], /not a duration/],
      [["branches", "list", "--project", "p", "--bogus"], /Unknown option '--bogus'/],
      [["members", "add", "--user", "a@b.c"], /exactly one of --project or --org/],
      [["users", "create", "not-an-email"], /not an email address/],
      [["orgs", "create", "Not A Slug"], /slug "Not A Slug" must be/],
      [[], /Usage: svc <command>/],
    ];
    for (const [args, message] of cases) {
      const run = await svcInProcess(args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr, args.join(" ")).toMatch(message);
    }
    const help = await svcInProcess(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/keys rotate --project <ref>/);
  });

  it("exits with 1 when the operation fails, with a JSON error under --json", { timeout: 60_000 }, async () => {
    const missing = await svc(["keys", "show", "--project", "proj_nope", "--json"]);
    expect(missing.code).toBe(1);
    expect(missing.json()).toEqual({ error: "Project proj_nope not found" });
    await svc(["orgs", "create", "dupe"]);
    const dupe = await svc(["orgs", "create", "dupe"]);
    expect(dupe.code).toBe(1);
    expect(dupe.stderr).toMatch(/already exists/);
  });

  it("reads the database and key from .svc/runtime.json when the environment has none", { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-cli-"));
    const file = join(dir, "runtime.json");
    writeFileSync(file, JSON.stringify({ databaseUrl: api.db.url, encryptionKey: TEST_ENCRYPTION_KEY }));
    const run = await svc(["setup", "--json"], { DATABASE_URL: undefined, SVC_ENCRYPTION_KEY: undefined, SVC_RUNTIME_FILE: file });
    expect(run.code).toBe(0);
    expect(run.json().environments.dev.secretKey).toBe(api.project.environments.dev.secretKey);
    const unconfigured = await svc(["setup"], { DATABASE_URL: undefined, SVC_ENCRYPTION_KEY: undefined });
    expect(unconfigured.code).toBe(1);
    expect(unconfigured.stderr).toMatch(/DATABASE_URL is not set/);
  });
});

describe("when the database is down or missing", () => {
  it("says Postgres cannot be reached and how to start it, on one line, exit 1, without the password", { timeout: 60_000 }, async () => {
    const port = await freePort();
    const run = await svc(["orgs", "create", "acme"], { DATABASE_URL: `postgres://svc:hunter2-secret@127.0.0.1:${port}/svc` });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(
      `error: cannot reach Postgres at 127.0.0.1:${port} (connection refused): is it running? Start it, or run \`svc dev\` (in svc's repository: \`pnpm start\`), which runs an embedded one, or set DATABASE_URL to a running server\n`,
    );
  });

  it("says how to create a database that does not exist, on one line, exit 1 (also under --json)", { timeout: 60_000 }, async () => {
    const url = new URL(api.db.url);
    url.pathname = "/svc_no_such_database";
    const { hostname, port, username } = url;
    const sentence =
      `database "svc_no_such_database" does not exist on ${hostname}:${port || 5432}: create it with ` +
      `\`createdb -h ${hostname} -p ${port || 5432} -U ${username} svc_no_such_database\` or point DATABASE_URL at an existing database`;
    const run = await svc(["setup"], { DATABASE_URL: url.toString() });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`error: ${sentence}\n`);

    const inProcess = await svcInProcess(["setup", "--json"], url.toString());
    expect(inProcess.code).toBe(1);
    expect(inProcess.stderr).toBe(`error: ${sentence}\n`);
    expect(JSON.parse(inProcess.stdout)).toEqual({ error: sentence });
  });

  it("says the server refused the user, without the password", async () => {
    const url = new URL(api.db.url);
    url.username = "svc_no_such_role";
    url.password = "hunter2-secret";
    const run = await svcInProcess(["setup"], url.toString());
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: Postgres at .+ refused user "svc_no_such_role" \(.+\): check the user and password in DATABASE_URL\n$/);
    expect(run.stderr).not.toContain("hunter2");
  });
});
