import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runSvc } from "../src/svc.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const EXAMPLE_CONFIG = fileURLToPath(new URL("../../../examples/hello/svc.config.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
// tsx by path: the empty folder a test runs svc in cannot resolve it.
const TSX = import.meta.resolve("tsx");

describe("the svc process", () => {
  it("stops quietly when the reader of its output goes away (svc … | head)", async () => {
    const child = spawn(process.execPath, ["--import", TSX, MAIN, "--help"], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.destroy(); // the reader is gone before svc writes
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.once("exit", (c, signal) => resolve(c ?? signal)));
    expect(stderr).not.toMatch(/EPIPE|Error/);
    expect(code).toBe(0);
  });

  it("svc worker without a project config says where it looked and what to do, before it connects anywhere", async () => {
    const empty = mkdtempSync(join(tmpdir(), "svc-no-config-"));
    try {
      const child = spawn(process.execPath, ["--import", TSX, MAIN, "worker"], {
        cwd: empty,
        env: { ...process.env, SVC_CONFIG: "", DATABASE_URL: "postgres://nobody@127.0.0.1:1/none", SVC_ENCRYPTION_KEY: "k8Qz0vN3pX7rT2mW5yB9cF4hJ6" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise((resolve) => child.once("exit", (c) => resolve(c)));
      expect(code).toBe(1);
      expect(stderr).toMatch(/no svc\.config\.ts, svc\.config\.mts, svc\.config\.js, svc\.config\.mjs in .*svc-no-config-.*run `svc init`/);
      expect(stderr).not.toMatch(/ECONNREFUSED|\n\s+at /);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("svc dev says what is wrong with the database or the config, in one line, and exits 1", async () => {
    const state = mkdtempSync(join(tmpdir(), "svc-dev-state-"));
    const run = async (args: string[], env: Record<string, string>) => {
      const child = spawn(process.execPath, ["--import", TSX, MAIN, "dev", "--no-watch", ...args], { env: { ...process.env, SVC_STATE_DIR: state, ...env }, stdio: ["ignore", "pipe", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise((resolve) => child.once("exit", (c) => resolve(c)));
      return { code, stderr };
    };
    try {
      const admin = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
      admin.pathname = "/svc_no_such_database";
      const missing = await run(["--config", EXAMPLE_CONFIG], { DATABASE_URL: admin.toString() });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/^error: database "svc_no_such_database" does not exist on .+: create it with `createdb /);
      expect(missing.stderr).not.toMatch(/\n\s+at /);

      const noConfig = await run(["--config", join(state, "nope.config.ts")], { DATABASE_URL: admin.toString() });
      expect(noConfig.code).toBe(1);
      expect(noConfig.stderr).toMatch(/nope\.config\.ts does not exist: run `svc init`/);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});

/** `svc …` in a process of its own: its exit code and output. */
async function svcProcess(args: string[], options: { cwd?: string; env?: Record<string, string | undefined> } = {}) {
  const env = Object.fromEntries(Object.entries({ ...process.env, ...options.env }).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv;
  const child = spawn(process.execPath, ["--import", TSX, MAIN, ...args], { cwd: options.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise((resolve) => child.once("close", (c) => resolve(c)));
  return { code, stdout, stderr };
}

describe("svc dev before it starts anything", () => {
  it("with its port taken: says so in one line and exits 1, before any database work or key", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const state = mkdtempSync(join(tmpdir(), "svc-dev-port-"));
    try {
      // A database that does not exist: reaching it would be another error.
      const ran = await svcProcess(["dev", "--config", EXAMPLE_CONFIG], { env: { PORT: String(port), SVC_STATE_DIR: state, DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" } });
      expect(ran.code).toBe(1);
      expect(ran.stderr).toBe(`error: port ${port} is in use (another svc dev, or another program): stop it, or start svc dev with PORT=<another port>\n`);
      expect(ran.stdout).not.toMatch(/svc_dev_|dev key|svc is starting/);
    } finally {
      server.close();
      rmSync(state, { recursive: true, force: true });
    }
  });

  it("`pnpm svc dev` in svc's repository finds a config (the example tasks) and gets as far as the database", async () => {
    const state = mkdtempSync(join(tmpdir(), "svc-dev-repo-"));
    try {
      const admin = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
      admin.pathname = "/svc_no_such_database";
      const ran = await svcProcess(["dev", "--no-watch"], { cwd: ROOT, env: { SVC_CONFIG: undefined, SVC_STATE_DIR: state, DATABASE_URL: admin.toString(), PORT: "0" } });
      expect(ran.code).toBe(1);
      expect(ran.stderr).toMatch(/^error: database "svc_no_such_database" does not exist/);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});

describe("svc api and svc worker with settings missing", () => {
  it.each(["api", "worker"])("svc %s names each missing setting and how to set it, never zod's words", async (service) => {
    const ran = await svcProcess([service, ...(service === "worker" ? ["--config", EXAMPLE_CONFIG] : [])], { env: { DATABASE_URL: undefined, SVC_ENCRYPTION_KEY: undefined, PORT: "eighty" } });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(new RegExp(`^svc ${service}: invalid (API|worker) configuration \\(environment variables; all of them: docs/configuration\\.md\\):\n`));
    expect(ran.stderr).toMatch(/^ {2}DATABASE_URL is not set: the Postgres connection string, e\.g\. DATABASE_URL=postgres:\/\/user:password@host:5432\/svc$/m);
    expect(ran.stderr).toMatch(/^ {2}SVC_ENCRYPTION_KEY is not set: .*make one with `openssl rand -base64 32`/m);
    if (service === "api") expect(ran.stderr).toMatch(/^ {2}PORT: must be a number$/m);
    expect(ran.stderr).not.toMatch(/Invalid input|expected string|received undefined|\n\s+at /);
  });
});

describe("help", () => {
  const here = async (args: string[]) => {
    let stdout = "";
    let stderr = "";
    const code = await runSvc(args, {}, { stdout: (t) => (stdout += t + "\n"), stderr: (t) => (stderr += t + "\n") });
    return { code, stdout, stderr };
  };

  it("svc --help lists every command: setup, access, the runs and tokens commands, the operators'", async () => {
    const { code, stdout } = await here(["--help"]);
    expect(code).toBe(0);
    for (const command of ["init", "dev", "api", "worker", "setup", "access", "keys show", "keys rotate", "pats create", "migrate", "runs list", "runs show", "runs trigger", "runs cancel", "runs replay", "tokens complete"]) {
      expect(stdout, command).toMatch(new RegExp(`^  ${command}\\b`, "m"));
    }
  });

  it.each([["init"], ["dev"], ["api"], ["worker"]])("svc %s --help", async (command) => {
    const { code, stdout } = await here([command, "--help"]);
    expect(code).toBe(0);
    expect(stdout).toMatch(new RegExp(`^usage: svc ${command}`));
  });

  it("svc keys --help (and every other operator group) lists its commands; svc keys alone too, with exit 2", async () => {
    const keys = await here(["keys", "--help"]);
    expect(keys.code).toBe(0);
    expect(keys.stdout).toMatch(/svc keys rotate --project <ref>[\s\S]*svc keys show \[--project <ref>\]/);
    for (const group of ["orgs", "projects", "branches", "users", "pats", "members", "retention"]) expect((await here([group, "-h"])).code, group).toBe(0);
    const bare = await here(["keys"]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/svc keys show/);
    const unknown = await here(["keys", "frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "keys frobnicate"; svc keys has: rotate, show/);
  });

  it("svc dev --help in a process of its own: prints and exits 0, starting nothing", async () => {
    const ran = await svcProcess(["dev", "--help"], { env: { DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" } });
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(/^usage: svc dev \[--config <file>\] \[--no-watch\]\n/);
    expect(ran.stderr).toBe("");
  });

  it("the compose file's comments name only commands svc has, with options it takes", async () => {
    const compose = readFileSync(join(ROOT, "docker-compose.yml"), "utf8");
    const named = [...compose.matchAll(/^#.*\/svc ([^)\n]+)/gm)].map((m) => m[1]!.trim().split(/\s+/));
    expect(named.length).toBeGreaterThan(0);
    for (const args of named) expect((await here([...args, "--help"])).code, args.join(" ")).toBe(0);
  });
});
