// `pnpm bench`: svc's speed goals, measured on this machine (never asserted in tests).
// Scenarios: throughput (issue #2), resume latency, suspended capacity, timeout lateness and
// replay cost (issue #3), realtime run subscriptions and metadata (realtime), what metrics cost on the resume path (metrics), the dashboard's run list over a
// million runs (dashboard), deleting runs past their retention (retention); svc next to
// graphile-worker and DBOS Transact (peers), ten million runs of history (history), the
// waitpoint-token list over a history (tokens) and a soak (soak), those four only when chosen; worker and API processes side by side on one Postgres, and
// resume offers' give-backs (scaleout), the claim's cost with and without a rate limit (ratelimit). Choose with
// BENCH=throughput,resume,... ; sizes with BENCH_* variables.
import { benchDatabase, maybeEmbedded } from "./setup.ts";
import { throughputScenario } from "./throughput.ts";
import { resumeLatencyScenario } from "./resume-latency.ts";
import { suspendedScenario } from "./suspended.ts";
import { timeoutScenario } from "./timeouts.ts";
import { replayScenario } from "./replay.ts";
import { sessionsScenario } from "./sessions.ts";
import { metricsScenario } from "./metrics.ts";
import { dashboardScenario } from "./dashboard.ts";
import { retentionScenario } from "./retention.ts";
import { peersScenario } from "./peers.ts";
import { historyScenario } from "./history.ts";
import { soakScenario } from "./soak.ts";
import { scaleoutScenario } from "./scaleout.ts";
import { tokenListScenario } from "./token-list.ts";
import { realtimeScenario } from "./realtime.ts";
import { rateLimitScenario } from "./rate-limit.ts";
import { machineCheck } from "./machine-check.ts";
import { DEFAULT_RETENTION_PACE, validateRetentionPace } from "../packages/runtime/src/engine/index.ts";
import { settle } from "./settle.ts";

const selected = new Set((process.env.BENCH ?? "throughput,resume,timeouts,replay,realtime,sessions,metrics,suspended,dashboard,retention,scaleout,ratelimit").split(","));
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/**
 * BENCH_HISTORY_RETENTION_PACES: "batch:rest,…", e.g. "1000:1,1000:4" (the rest ratio alone takes
 * the default batch size); unset: the workers' default pace.
 */
function retentionPaces(value: string | undefined): { batchSize: number; restRatio: number }[] {
  if (!value) return [DEFAULT_RETENTION_PACE];
  return value.split(",").map((item) => {
    const [a, b] = item.split(":");
    const pace = b === undefined ? { ...DEFAULT_RETENTION_PACE, restRatio: Number(a) } : { batchSize: Number(a), restRatio: Number(b) };
    return validateRetentionPace(pace);
  });
}

const embedded = await maybeEmbedded();
const report: string[] = [`svc benchmark — ${new Date().toISOString()} — node ${process.version}, ${process.env.DATABASE_URL ? "DATABASE_URL" : "embedded Postgres"}`];
const print = (lines: string[]) => {
  console.log("\n" + lines.join("\n"));
  report.push("", ...lines);
};
try {
  const check = async (when: string) => {
    const db = await benchDatabase("machine", embedded);
    print(await machineCheck(db.url, when).finally(() => db.close()));
  };
  // Each scenario starts on a settled server: the previous one's dirty pages are on disk.
  const scenario = async (name: string, run: () => Promise<string[]>) => {
    if (!selected.has(name)) return;
    const unsettled = await settle(process.env.DATABASE_URL ?? embedded!.url);
    const lines = await run();
    print(unsettled ? [...lines, unsettled] : lines);
  };
  await check("before the scenarios");
  await scenario("throughput", () => throughputScenario(embedded, num("BENCH_RUNS", 10_000), num("BENCH_REPEAT", 3), num("BENCH_TP_WARMUP", 2_000)));
  await scenario("resume", () => resumeLatencyScenario(embedded, num("BENCH_WAITS", 1000), num("BENCH_WARMUP", 500)));
  await scenario("timeouts", () => timeoutScenario(embedded, num("BENCH_TIMEOUTS", 300)));
  await scenario("replay", () => replayScenario(embedded));
  await scenario("realtime", () => realtimeScenario(embedded, { updates: num("BENCH_REALTIME_UPDATES", 500), subscribers: num("BENCH_REALTIME_SUBSCRIBERS", 10_000), sets: num("BENCH_METADATA_SETS", 2_000) }));
  await scenario("sessions", () =>
    sessionsScenario(embedded, { turns: num("BENCH_SESSION_TURNS", 1000), turnsPerSession: num("BENCH_TURNS_PER_SESSION", 100), subscribers: num("BENCH_SUBSCRIBERS", 10_000), idle: num("BENCH_IDLE_SESSIONS", 10_000), profile: process.env.BENCH_SESSIONS_PROFILE === "1" }),
  );
  await scenario("metrics", () => metricsScenario(embedded, num("BENCH_METRICS_ROUNDS", 4), num("BENCH_METRICS_WAITS", 500), num("BENCH_METRICS_WARMUP", 300), num("BENCH_METRICS_SCRAPE_MS", 15_000), process.env.BENCH_METRICS_CONTROL === "1"));
  await scenario("suspended", () => suspendedScenario(embedded, num("BENCH_SUSPENDED", 100_000)));
  await scenario("dashboard", () =>
    dashboardScenario(embedded, { runs: num("BENCH_DASHBOARD_RUNS", 1_000_000), samples: num("BENCH_DASHBOARD_SAMPLES", 60), pages: num("BENCH_DASHBOARD_PAGES", 50), target: process.env.BENCH_DASHBOARD_TARGET ?? "auto" }),
  );
  await scenario("retention", () =>
    retentionScenario(embedded, { runs: num("BENCH_RETENTION_RUNS", 200_000), batchSize: num("BENCH_RETENTION_BATCH", 1000), restRatio: num("BENCH_RETENTION_REST", DEFAULT_RETENTION_PACE.restRatio), triggers: num("BENCH_RETENTION_TRIGGERS", 300) }),
  );
  await scenario("history", () =>
    historyScenario({
      runs: num("BENCH_HISTORY_RUNS", 10_000_000),
      repeat: num("BENCH_HISTORY_REPEAT", 2),
      batched: num("BENCH_HISTORY_BATCHED", 10_000),
      oneByOne: num("BENCH_HISTORY_ONE_BY_ONE", 3_000),
      waits: num("BENCH_HISTORY_WAITS", 1_000),
      timeouts: num("BENCH_HISTORY_TIMEOUTS", 300),
      samples: num("BENCH_HISTORY_SAMPLES", 30),
      pages: num("BENCH_HISTORY_PAGES", 50),
      retentionDays: num("BENCH_HISTORY_RETENTION_DAYS", 29),
      loadSeconds: num("BENCH_HISTORY_LOAD_SECONDS", 30),
      sweepSeconds: num("BENCH_HISTORY_SWEEP_SECONDS", 0),
      retentionPaces: retentionPaces(process.env.BENCH_HISTORY_RETENTION_PACES),
      retentionOnly: process.env.BENCH_HISTORY_ONLY === "retention",
    }),
  );
  await scenario("tokens", () =>
    tokenListScenario(embedded, { runs: num("BENCH_TOKENS_RUNS", 1_200_000), tokensEvery: num("BENCH_TOKENS_EVERY", 10), samples: num("BENCH_TOKENS_SAMPLES", 60), pages: num("BENCH_TOKENS_PAGES", 50) }),
  );
  await scenario("soak", () =>
    soakScenario({
      minutes: num("BENCH_SOAK_MINUTES", 30),
      windowMinutes: num("BENCH_SOAK_WINDOW_MINUTES", 5),
      triggersPerSecond: num("BENCH_SOAK_TRIGGERS", 40),
      resumesPerSecond: num("BENCH_SOAK_WAITS", 20),
      listsPerSecond: num("BENCH_SOAK_LISTS", 2),
      rareFilter: process.env.BENCH_SOAK_RARE_FILTER !== "0",
    }),
  );
  await scenario("scaleout", () =>
    scaleoutScenario(embedded, {
      workerCounts: (process.env.BENCH_SCALEOUT_WORKERS ?? "1,2,4").split(",").filter(Boolean).map(Number),
      apis: num("BENCH_SCALEOUT_APIS", 2),
      concurrency: num("BENCH_SCALEOUT_CONCURRENCY", 50),
      runs: num("BENCH_SCALEOUT_RUNS", 5000),
      warmup: num("BENCH_SCALEOUT_WARMUP", 1000),
      inFlight: num("BENCH_SCALEOUT_IN_FLIGHT", 32),
      waits: num("BENCH_SCALEOUT_WAITS", 500),
      giveBacks: {
        workers: num("BENCH_GIVEBACK_WORKERS", 4),
        slots: num("BENCH_GIVEBACK_SLOTS", 8),
        load: num("BENCH_GIVEBACK_LOAD", 0.8),
        holdMs: num("BENCH_GIVEBACK_HOLD_MS", 200),
        resumes: num("BENCH_GIVEBACK_RESUMES", 3000),
        warmup: num("BENCH_GIVEBACK_WARMUP", 300),
        sides: (process.env.BENCH_GIVEBACK_SIDES ?? "random,slot-aware").split(",").filter(Boolean) as ("random" | "slot-aware")[],
      },
    }),
  );
  await scenario("ratelimit", () => rateLimitScenario(embedded, { claims: num("BENCH_RATELIMIT_CLAIMS", 2000), batch: num("BENCH_RATELIMIT_BATCH", 1) }));
  await scenario("peers", () =>
    peersScenario(embedded, {
      runs: num("BENCH_PEERS_RUNS", 1000),
      inFlight: num("BENCH_PEERS_IN_FLIGHT", 6000),
      waits: num("BENCH_PEERS_WAITS", 1000),
      warmup: num("BENCH_PEERS_WARMUP", 1000),
      repeat: num("BENCH_PEERS_REPEAT", 3),
      writes: process.env.BENCH_PEERS_WRITES !== "0",
    }),
  );
  await check("after the scenarios");
} finally {
  await embedded?.stop();
}
process.exit(0);
