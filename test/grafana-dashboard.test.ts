// docs/grafana-dashboard.json: valid JSON Grafana imports, whose every query names only metrics
// svc's processes export, and which shows every svc_ metric.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { systemClock } from "../packages/runtime/src/engine/index.ts";
import { createApiMetrics } from "../packages/api/src/metrics/api-metrics.ts";
import { createWorkerMetrics } from "../packages/worker/src/metrics/worker-metrics.ts";
import { WorkerEvents } from "../packages/worker/src/events.ts";
import type { Worker } from "../packages/worker/src/worker.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
interface Panel { type: string; title: string; targets?: { expr: string; refId: string }[]; panels?: Panel[]; gridPos: { h: number; w: number; x: number; y: number } }
const dashboard = JSON.parse(readFileSync(`${ROOT}docs/grafana-dashboard.json`, "utf8")) as { title: string; uid: string; schemaVersion: number; panels: Panel[]; templating: { list: { name: string }[] } };

/** Every metric family the API and a worker register, with a histogram's series names. */
function exportedSeries(): Set<string> {
  // Never connected: registering metrics reads nothing (collect() runs only when scraped).
  const pool = new pg.Pool({ connectionString: "postgres://127.0.0.1:1/none" });
  const worker = { events: new WorkerEvents(), concurrency: 1, slotsInUse: () => 0 } as unknown as Worker;
  const registries = [createApiMetrics({ pool, clock: systemClock }).registry, createWorkerMetrics(worker, { pool, clock: systemClock }).registry];
  const names = new Set<string>();
  for (const registry of registries) {
    for (const metric of registry.getMetricsAsArray() as unknown as { name: string; type?: string }[]) {
      names.add(metric.name);
      for (const suffix of ["_bucket", "_sum", "_count"]) names.add(metric.name + suffix);
    }
  }
  return names;
}

const PROMQL_WORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"]);

/** The metric names a PromQL expression selects (functions, keywords, labels, ranges and strings left out). */
export function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "");
  return [...bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(?!\s*\(|[a-zA-Z0-9_:])/g)].map((m) => m[0]).filter((word) => !PROMQL_WORDS.has(word.toLowerCase()));
}

function allPanels(panels: Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

describe("docs/grafana-dashboard.json", () => {
  const panels = allPanels(dashboard.panels);
  const targets = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

  it("is a dashboard Grafana imports: title, uid, schema version, a data source variable, panels with queries", () => {
    expect(dashboard.title).toBe("svc");
    expect(dashboard.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(30);
    expect(dashboard.templating.list.map((v) => v.name)).toContain("datasource");
    expect(targets.length).toBeGreaterThan(10);
    const ids = new Set<number>();
    for (const panel of dashboard.panels as (Panel & { id: number })[]) {
      expect(ids.has(panel.id), `panel id ${panel.id}`).toBe(false);
      ids.add(panel.id);
      expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
    }
  });

  it("queries only metrics svc exports", () => {
    const exported = exportedSeries();
    for (const { panel, expr } of targets) {
      const names = metricNamesIn(expr);
      expect(names.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) expect(exported.has(name), `${panel}: ${name} in ${expr}`).toBe(true);
    }
  });

  it("shows every svc_ metric", () => {
    const used = new Set(targets.flatMap((t) => metricNamesIn(t.expr)).map((name) => name.replace(/_(bucket|sum|count)$/, "")));
    const svcMetrics = [...exportedSeries()].filter((name) => name.startsWith("svc_") && !/_(bucket|sum|count)$/.test(name));
    expect(svcMetrics.length).toBeGreaterThanOrEqual(12);
    for (const name of svcMetrics) expect(used.has(name), name).toBe(true);
  });

  it("the name extraction finds metrics and skips functions, labels and ranges", () => {
    expect(metricNamesIn('histogram_quantile(0.99, sum by (le, route) (rate(svc_http_request_duration_seconds_bucket{job=~"a|b",status="5.."}[$__rate_interval])))')).toEqual(["svc_http_request_duration_seconds_bucket"]);
    expect(metricNamesIn("sum(svc_worker_slots_in_use) / sum(svc_worker_slots)")).toEqual(["svc_worker_slots_in_use", "svc_worker_slots"]);
    expect(metricNamesIn("max by (queue) (no_such_metric) > 60")).toEqual(["no_such_metric"]);
  });
});
