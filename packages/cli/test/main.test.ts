import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
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
});
