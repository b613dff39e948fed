import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";

const run = promisify(execFile);
const REDOCLY = fileURLToPath(new URL("../node_modules/.bin/redocly", import.meta.url));

let api: TestApi;
let dir: string;
beforeAll(async () => {
  api = await startTestApi();
  dir = mkdtempSync(join(tmpdir(), "svc-openapi-"));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await api?.close();
});

it("the served OpenAPI document passes `redocly lint` (recommended rules) with 0 errors", { timeout: 60_000 }, async () => {
  const res = await api.app.inject({ method: "GET", url: "/api/openapi.json" });
  expect(res.statusCode).toBe(200);
  const file = join(dir, "openapi.json");
  writeFileSync(file, res.body);
  // Exit code 1 means errors; the JSON report says which. No network: telemetry off.
  const result = await run(REDOCLY, ["lint", file, "--extends", "recommended", "--format", "json"], {
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { stdout?: string; stderr?: string; code?: number }) => ({ stdout: error.stdout ?? "", stderr: error.stderr ?? "", code: error.code }));
  if (!result.stdout.trim().startsWith("{")) throw new Error(`redocly gave no JSON report (exit ${"code" in result ? result.code : 0}): ${result.stderr.slice(0, 2000)}`);
  const report = JSON.parse(result.stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };
  const errors = report.problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
  expect(errors).toEqual([]);
  expect(report.totals.errors).toBe(0);
});
