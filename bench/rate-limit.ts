// What a rate limit costs the claim (issue 35 §3, docs/rate-limits.md): one worker's claim of a
// limited queue (claimLimited: the queue's advisory lock, then CLAIM_LIMITED_SQL, in one
// transaction), timed call by call, on queues of one database with a deep backlog, whose rates
// never bind:
//   concurrency        concurrencyLimit only, far above what a claim takes (the claim fills its batch)
//   concurrency binds  concurrencyLimit equal to the batch, the claim asking for ten times that
//                      (the limit, not the batch, decides how many it takes)
//   concurrency × 100  concurrencyLimit, the runs spread over 100 concurrency keys (the ranked window)
//   rate               a rateLimit (its log read and written by the claim)
//   rate × 100         a rateLimit, the runs spread over 100 rate keys
//   both               a concurrencyLimit and a rateLimit
//   own rate × 100     no declared rate: each run's trigger gives its own (rateLimit { key, limit,
//                      period }), over 100 rate keys
// and the plain claim (claimReady) for scale. No worker runs: the claims are called directly, and
// the claimed runs are ended between calls (untimed) so that no queue fills up. The sides take
// turns in blocks of 100 claims, the side that starts rotating, so that all see the same machine.
import { triggerRuns, type EngineDeps, type Environment } from "../packages/runtime/src/engine/index.ts";
import { claimLimited, claimRateLimited, claimReady, type Claimer } from "../packages/worker/src/execution/claim.ts";
import { benchDatabase, benchStack } from "./setup.ts";
import { line, now, percentiles } from "./stats.ts";

interface Side {
  name: string;
  task: string;
  queue: string;
  keys: number;
  /** What the runs' keys are: concurrency keys, rate keys, or rate keys with the run's own rate (when `keys` > 1). */
  keyed?: "concurrency" | "rate" | "own";
  /** How many runs a claim asks for, in batches (1: the batch); it takes one batch. */
  asks?: number;
  claim: (claimer: Claimer, limit: number, at: Date) => Promise<{ length: number; ids: string[] }>;
}

export async function rateLimitScenario(embedded: { url: string } | undefined, options: { claims: number; batch: number }): Promise<string[]> {
  const db = await benchDatabase("ratelimit", embedded);
  const stack = await benchStack(db.url, {});
  const { engine, env } = stack;
  const pool = engine.db;
  const ids = (claims: { run: { id: string } }[]) => ({ length: claims.length, ids: claims.map((c) => c.run.id) });
  const sides: Side[] = [
    { name: "plain claim (no limit)", task: "b-plain", queue: "task/b-plain", keys: 1, claim: async (c, n, at) => ids(await claimReady(pool, c, n, at, 60_000)) },
    { name: "limited: concurrencyLimit only", task: "b-conc", queue: "task/b-conc", keys: 1, claim: async (c, n, at) => ids(await claimLimited(pool, c, "task/b-conc", n, at, 60_000)) },
    { name: "limited: concurrencyLimit binds (asks 10×)", task: "b-bind", queue: "task/b-bind", keys: 1, asks: 10, claim: async (c, n, at) => ids(await claimLimited(pool, c, "task/b-bind", n, at, 60_000)) },
    { name: "limited: concurrencyLimit, 100 concurrency keys", task: "b-ckeys", queue: "task/b-ckeys", keys: 100, keyed: "concurrency", claim: async (c, n, at) => ids(await claimLimited(pool, c, "task/b-ckeys", n, at, 60_000)) },
    { name: "limited: rateLimit", task: "b-rate", queue: "task/b-rate", keys: 1, claim: async (c, n, at) => ids((await claimRateLimited(pool, c, "task/b-rate", n, at, 60_000)).claims) },
    { name: "limited: rateLimit, 100 rate keys", task: "b-keys", queue: "task/b-keys", keys: 100, keyed: "rate", claim: async (c, n, at) => ids((await claimRateLimited(pool, c, "task/b-keys", n, at, 60_000)).claims) },
    { name: "limited: concurrencyLimit and rateLimit", task: "b-both", queue: "task/b-both", keys: 1, claim: async (c, n, at) => ids((await claimRateLimited(pool, c, "task/b-both", n, at, 60_000)).claims) },
    { name: "limited: runs' own rate, 100 rate keys", task: "b-own", queue: "task/b-own", keys: 100, keyed: "own", claim: async (c, n, at) => ids((await claimRateLimited(pool, c, "task/b-own", n, at, 60_000)).claims) },
  ];
  // Registered as a worker would; rates far above what one claimer reaches, so they never bind.
  await pool.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, worker_version, rate_limit, rate_period_ms) VALUES
       ($1, 'b-plain', 'task/b-plain', NULL, 'bench', NULL, NULL),
       ($1, 'b-conc', 'task/b-conc', 1000, 'bench', NULL, NULL),
       ($1, 'b-bind', 'task/b-bind', $2::int, 'bench', NULL, NULL),
       ($1, 'b-ckeys', 'task/b-ckeys', 1000, 'bench', NULL, NULL),
       ($1, 'b-rate', 'task/b-rate', NULL, 'bench', 10000, 1000),
       ($1, 'b-keys', 'task/b-keys', NULL, 'bench', 10000, 1000),
       ($1, 'b-both', 'task/b-both', 1000, 'bench', 10000, 1000),
       ($1, 'b-own', 'task/b-own', NULL, 'bench', NULL, NULL)`,
    [env.id, options.batch],
  );
  const perSide = options.claims;
  // A backlog deeper than the limited claim's window (1,000 runs) to the last claim.
  for (const side of sides) await fill(engine, env, side, perSide * options.batch + 1000);
  await pool.query("VACUUM ANALYZE runs");
  const samples = new Map(sides.map((s) => [s.name, [] as number[]]));
  const claimer = (task: string): Claimer => ({ id: "bench-claimer", version: "bench", environmentId: env.id, tasks: [task] });
  const BLOCK = 100;
  for (let block = 0; block * BLOCK < perSide; block++) {
    const order = sides.map((_, i) => sides[(i + block) % sides.length]!);
    for (const side of order) {
      for (let i = 0; i < BLOCK && block * BLOCK + i < perSide; i++) {
        const at = engine.clock.now();
        const started = now();
        const claimed = await side.claim(claimer(side.task), options.batch * (side.asks ?? 1), at);
        samples.get(side.name)!.push(now() - started);
        if (claimed.length !== options.batch) throw new Error(`${side.name}: claimed ${claimed.length} runs, not ${options.batch}`);
        await pool.query(`UPDATE runs SET status = 'COMPLETED', finished_at = $2 WHERE id = ANY($1) AND status = 'EXECUTING'`, [claimed.ids, at]);
      }
    }
  }
  const out = [`## Rate limits: the claim's cost with and without one (${perSide} claims of ${options.batch} run(s) per side, interleaved; rates never bind)`];
  const plain = percentiles(samples.get(sides[0]!.name)!).p50;
  const base = percentiles(samples.get(sides[1]!.name)!).p50;
  for (const side of sides) {
    const p = percentiles(samples.get(side.name)!);
    out.push(`${line(side.name, p)}  p50 ÷ plain claim ${(p.p50 / plain).toFixed(2)}, ÷ concurrencyLimit only ${(p.p50 / base).toFixed(2)}`);
  }
  const { rows } = await pool.query<{ n: number; bytes: number }>(`SELECT count(*)::int AS n, coalesce(sum(pg_column_size(w.*)), 0)::int AS bytes FROM rate_limit_windows w`);
  out.push(`rate_limit_windows after: ${rows[0]!.n} rows, ${rows[0]!.bytes} bytes`);
  await stack.close();
  await db.close();
  return out;
}

/** Triggers `count` runs of the side's task, in batches of 1,000, spread over its keys. */
async function fill(engine: EngineDeps, env: Environment, side: Side, count: number): Promise<void> {
  for (let start = 0; start < count; start += 1000) {
    const n = Math.min(1000, count - start);
    const inputs = Array.from({ length: n }, (_, i) => ({
      taskIdentifier: side.task,
      payload: { i: start + i },
      options: side.keys === 1 ? {} : optionsOf(side.keyed, `k${(start + i) % side.keys}`),
    }));
    await triggerRuns(engine, env, inputs);
  }
}

/** A run's trigger options for key `key` of a side's kind; an own rate far above what one claimer reaches. */
function optionsOf(keyed: Side["keyed"], key: string) {
  if (keyed === "concurrency") return { concurrencyKey: key };
  return keyed === "own" ? { rateLimit: { key, limit: 10_000, period: 1000 } } : { rateLimit: { key } };
}
