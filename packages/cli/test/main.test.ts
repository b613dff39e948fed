import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const EXAMPLE_CONFIG = fileURLToPath(new URL("../../../examples/hello/svc.config.ts", import.meta.url));
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
