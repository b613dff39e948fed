// One worker process of the scale-out scenario (bench/scaleout.ts spawns 1, 2 or 4 of them): a
// worker as `svc worker` runs it (its own pools and LISTEN connection), with the
// scenario's tasks, telling the benchmark process what it did over the IPC channel. Times are
// process.hrtime (CLOCK_MONOTONIC): the same clock in every process of the machine.
import pg from "pg";
import { createPool } from "../packages/runtime/src/db/index.ts";
import { connectTestEngine, wakeDispatcher } from "../packages/runtime/src/testing/connect-engine.ts";
import { forToken, task } from "../packages/runtime/src/sdk/index.ts";
import { tokenCreator } from "../packages/worker/src/execution/create-token.ts";
import { createWorker } from "../packages/worker/src/worker.ts";

/** What a worker process tells the benchmark process. */
export type WorkerMessage =
  | { type: "ready"; workerId: string }
  /** Events since the last tally, sent at most once per event-loop turn. */
  | { type: "tally"; finished: string[]; suspended: string[]; resumedVia: Record<string, number>; givenBack: number; flagWrites: number; claims: number; emptyClaims: number; statements: number }
  /** The code after a wait ran (`at`: hrtime in ns, as a string). */
  | { type: "resumed"; tokenId: string; at: string }
  | { type: "slots"; inUse: number }
  /** Every statement sent so far, counted by kind (statementKind), in answer to a "kinds" message. */
  | { type: "kinds"; counts: Record<string, number> };

const send = (message: WorkerMessage) => process.send!(message);
const holdMs = Number(process.env.SCALEOUT_HOLD_MS ?? 0);

/** Trivial runs: trigger → COMPLETED. */
const noop = task({ id: "scaleout-noop", run: async () => 1 });
/** A wait; the code after it says when it ran, then holds its slot for SCALEOUT_HOLD_MS. */
const waiter = task({
  id: "scaleout-wait",
  run: async (payload: { tokenId: string }) => {
    await forToken(payload.tokenId);
    send({ type: "resumed", tokenId: payload.tokenId, at: process.hrtime.bigint().toString() });
    if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
    return 1;
  },
});

const url = process.env.DATABASE_URL!;
const pool = createPool(url, { max: 5, applicationName: "svc-bench-worker", onError: (error) => console.error("bench worker pool:", error.message) });
const connected = await connectTestEngine({ url, pool }, { dispatcher: wakeDispatcher, apiUrl: "http://localhost" });
const { engine, env } = connected;
const worker = createWorker({
  engine,
  databaseUrl: url,
  environment: env,
  tasks: [noop, waiter],
  workerVersion: "bench",
  concurrency: Number(process.env.WORKER_CONCURRENCY ?? 50),
  createToken: tokenCreator(engine),
  onError: (error, where) => console.error(`worker error (${where}):`, error),
});

let tally = { finished: [] as string[], suspended: [] as string[], resumedVia: {} as Record<string, number>, givenBack: 0, flagWrites: 0, claims: 0, emptyClaims: 0, statements: 0 };
let scheduled = false;

// Every statement this process sends (all its pools and the LISTEN connection: one pg
// module serves them all): what a worker process costs Postgres in round trips per run, and of
// which kind.
const kinds: Record<string, number> = {};
const sendQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  tally.statements++;
  const kind = statementKind(args[0] as string | { name?: string; text: string });
  kinds[kind] = (kinds[kind] ?? 0) + 1;
  flushSoon();
  // Claims from `runs` (and those that found no run): what each worker process added costs the
  // database. A pool calls with a callback (no promise back): the count rides on that callback.
  const claim = kind === "svc_claim_ready" || kind === "svc_claim_limited";
  const counted = (r: pg.QueryResult | undefined) => r?.rowCount === 0 && (tally.emptyClaims++, flushSoon());
  const last = args[args.length - 1];
  if (claim) {
    tally.claims++;
    if (typeof last === "function") args[args.length - 1] = (error: Error | null, r?: pg.QueryResult) => (error || counted(r), (last as (...a: unknown[]) => unknown)(error, r));
  }
  const result = (sendQuery as (...a: unknown[]) => unknown).apply(this, args);
  if (claim && typeof last !== "function" && result instanceof Promise) void result.then(counted, () => {});
  return result;
} as typeof pg.Client.prototype.query;
/** A prepared statement's name, else the text's start with its literals elided. */
function statementKind(query: string | { name?: string; text: string }): string {
  if (typeof query !== "string" && query.name) return query.name;
  const text = typeof query === "string" ? query : query.text;
  return text.replace(/'[^']*'/g, "'…'").replace(/\s+/g, " ").trim().slice(0, 70);
}
const flushSoon = () => {
  if (scheduled) return;
  scheduled = true;
  setImmediate(() => {
    scheduled = false;
    send({ type: "tally", ...tally });
    tally = { finished: [], suspended: [], resumedVia: {}, givenBack: 0, flagWrites: 0, claims: 0, emptyClaims: 0, statements: 0 };
  });
};
worker.events.on("runFinished", (e) => (tally.finished.push(e.runId), flushSoon()));
worker.events.on("runSuspended", (e) => (tally.suspended.push(e.runId), flushSoon()));
worker.events.on("runResumed", (e) => ((tally.resumedVia[e.via] = (tally.resumedVia[e.via] ?? 0) + 1), flushSoon()));
worker.events.on("offerGivenBack", () => (tally.givenBack++, flushSoon()));
worker.events.on("fullnessRecorded", (e) => e.changed && (tally.flagWrites++, flushSoon()));

let sampler: NodeJS.Timeout | null = null;
process.on("message", (message: { type: "sample"; everyMs: number } | { type: "stop" } | { type: "kinds" }) => {
  if (message.type === "kinds") {
    send({ type: "kinds", counts: { ...kinds } });
  } else if (message.type === "sample") {
    if (sampler) clearInterval(sampler);
    sampler = message.everyMs > 0 ? setInterval(() => send({ type: "slots", inUse: worker.slotsInUse() }), message.everyMs) : null;
  } else if (message.type === "stop") {
    if (sampler) clearInterval(sampler);
    void worker
      .drain()
      .then(() => connected.close())
      .then(() => pool.end())
      .catch((error) => console.error("bench worker stop:", error))
      .finally(() => process.exit(0));
  }
});

await worker.start();
send({ type: "ready", workerId: worker.id });
