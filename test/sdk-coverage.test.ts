import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { WILDCARD_PARAM } from "../packages/api/src/openapi/document.ts";
import { loadApiDescription } from "../scripts/http-reference.ts";
import { readInstalledApiClient, type InstalledApiClient } from "../scripts/sdk-api-client.ts";
import { SDK_COVERAGE } from "../scripts/sdk-coverage-classification.ts";
import { buildTriggerSdkDoc, callText, TRIGGER_SDK_DOC_PATH } from "../scripts/sdk-coverage.ts";

// The published SDK's API client against what svc serves: a new SDK version's new method or path,
// a served call whose route went away, and a planned call that got its route all fail here.
const ROOT = join(import.meta.dirname, "..");
let client: InstalledApiClient;
let routes: { method: string; path: string }[];

beforeAll(async () => {
  client = readInstalledApiClient();
  const { document } = await loadApiDescription();
  routes = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => ({ method: method.toUpperCase(), path })));
});

/** Whether the route `route` (OpenAPI form, `{file}` last: the rest of the path) takes the SDK's `path` (`{name}` for parameters). */
function routeTakes(route: string, path: string): boolean {
  const want = route.split("/");
  const got = path.split("/");
  const wildcard = want.at(-1) === `{${WILDCARD_PARAM}}`;
  if (wildcard ? got.length < want.length : got.length !== want.length) return false;
  return want.every((segment, i) => (segment.startsWith("{") ? got[i]!.length > 0 : segment === got[i]));
}

/** The last literal segment of a call's path (`/api/v1/sessions/{id}/end-and-continue` → `end-and-continue`). */
function literalTail(call: string): string {
  return call.split(" ")[1]!.split("/").filter((s) => s && !s.startsWith("{")).at(-1)!;
}

function served(call: string): boolean {
  const [method, path] = call.split(" ");
  return routes.some((r) => r.method === method && routeTakes(r.path, path!));
}

describe("coverage of @trigger.dev/sdk's API client", () => {
  it("reads the API client of the SDK the workspace installs (the version the tests use)", () => {
    const sdk = JSON.parse(readFileSync(join(ROOT, "node_modules/@trigger.dev/sdk/package.json"), "utf8")) as { version: string };
    expect(client.version).toBe(sdk.version);
    expect(client.methods.length).toBeGreaterThan(100);
    expect(client.methods.find((m) => m.name === "retrieveRun")?.calls).toEqual([{ method: "GET", path: "/api/v3/runs/{runId}" }]);
    expect(client.methods.find((m) => m.name === "streamBatchItems")?.calls).toEqual([{ method: "POST", path: "/api/v3/batches/{batchId}/items" }]);
    expect(client.methods.find((m) => m.name === "fetchStream")?.calls).toEqual([{ method: "GET", path: "/realtime/v1/streams/{runId}/{streamKey}" }]);
  });

  it("classifies every method of the installed SDK, with the requests it makes today", () => {
    const unclassified = client.methods.filter((m) => !SDK_COVERAGE[m.name]).map((m) => `${m.name}: ${m.calls.map(callText).join(", ") || "no request"}`);
    expect(unclassified, "new SDK methods: classify them in scripts/sdk-coverage-classification.ts").toEqual([]);
    const stale = Object.keys(SDK_COVERAGE).filter((name) => !client.methods.some((m) => m.name === name));
    expect(stale, "classified methods the SDK no longer has").toEqual([]);
    const changed = client.methods
      .filter((m) => JSON.stringify(m.calls.map(callText)) !== JSON.stringify(SDK_COVERAGE[m.name]!.calls))
      .map((m) => `${m.name}: now ${m.calls.map(callText).join(", ")}`);
    expect(changed, "methods whose requests changed: classify the new paths").toEqual([]);
  });

  it("has a route for every call it says svc serves, and names test files that use the real SDK", () => {
    const missing: string[] = [];
    for (const [name, entry] of Object.entries(SDK_COVERAGE)) {
      if (entry.status !== "served") continue;
      expect(entry.tests.length, name).toBeGreaterThan(0);
      for (const test of entry.tests) {
        expect(existsSync(join(ROOT, test)), `${name}: ${test} does not exist`).toBe(true);
        // Through the real SDK (or its API client), or over HTTP where the SDK's namespaces do not reach the call.
        const text = readFileSync(join(ROOT, test), "utf8");
        const drives = text.includes("@trigger.dev/") || entry.calls.some((call) => text.includes(literalTail(call)));
        expect(drives, `${name}: ${test} neither uses the SDK nor requests ${entry.calls.join(", ")}`).toBe(true);
      }
      for (const call of entry.calls) {
        const unserved = entry.notServed?.[call] !== undefined;
        if (served(call) === unserved) missing.push(`${name}: ${call} ${unserved ? "is served: drop it from notServed" : "has no route"}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("has no route for a call it says svc does not serve (flip a planned method to served once it has one)", () => {
    const routed = Object.entries(SDK_COVERAGE)
      .filter(([, entry]) => entry.status !== "served")
      .flatMap(([name, entry]) => entry.calls.filter(served).map((call) => `${name} (${entry.status}): ${call}`));
    expect(routed).toEqual([]);
  });

  it("is shown in docs/trigger-sdk.md as `pnpm docs:sdk` generates it", () => {
    const generated = buildTriggerSdkDoc();
    const committed = readFileSync(TRIGGER_SDK_DOC_PATH, "utf8");
    if (committed !== generated) {
      const a = committed.split("\n");
      const b = generated.split("\n");
      const line = a.findIndex((text, i) => text !== b[i]);
      throw new Error(`docs/trigger-sdk.md is out of date: run \`pnpm docs:sdk\` and commit it.\nfirst difference at line ${line + 1}:\n  committed: ${a[line]}\n  generated: ${b[line]}`);
    }
  });
});
