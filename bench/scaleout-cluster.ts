import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { postJson } from "./http-client.ts";
import type { WorkerMessage } from "./scaleout-worker.ts";
import { cpuMsOf } from "./process-cpu.ts";
import { spawnApiProcess } from "./setup.ts";

const WORKER_ENTRY = fileURLToPath(new URL("./scaleout-worker.ts", import.meta.url));

export interface ClusterOptions {
  url: string;
  apis: number;
  workers: number;
  /** Slots of each worker process. */
  concurrency: number;
  /** How long the code after a wait holds its slot. */
  holdMs: number;
  secretKey: string;
}

/** A worker process as the benchmark sees it: what it reported so far. */
interface WorkerProcess {
  child: ChildProcess;
  id: string;
  finished: number;
  resumedVia: Record<string, number>;
  givenBack: number;
  /** Writes of its full flag (workers.full_since). */
  flagWrites: number;
  /** Claims from `runs` (claim statements), and those that found no run. */
  claims: number;
  emptyClaims: number;
  /** Statements sent to Postgres, on every connection of the process. */
  statements: number;
  slotSamples: number[];
}

/** Totals over all worker processes, for the difference between two moments. */
export interface ClusterTally {
  finished: number[];
  resumedVia: Record<string, number>;
  givenBack: number;
  flagWrites: number;
  claims: number;
  emptyClaims: number;
  statements: number;
}

/**
 * API and worker processes against one database, each a process of its own: the APIs spawned as
 * in the other scenarios (`spawnApiProcess`), the workers forked from bench/scaleout-worker.ts with
 * an IPC channel, over which they report finished, suspended and resumed runs. Requests are spread
 * over the APIs in turn.
 */
export class Cluster {
  readonly apis: string[];
  readonly #apiChildren: ChildProcess[];
  readonly workers: WorkerProcess[];
  readonly #auth: Record<string, string>;
  #nextApi = 0;
  /** Runs announced before anyone waited for them, and the waiters for runs not announced yet. */
  readonly #arrived = { finished: new Set<string>(), suspended: new Set<string>() };
  readonly #waiters = { finished: new Map<string, () => void>(), suspended: new Map<string, () => void>() };
  readonly #resumed = new Map<string, (at: bigint) => void>();
  #finishedTotal = 0;
  readonly #kindsWaiters = new Map<WorkerProcess, (counts: Record<string, number>) => void>();
  #finishedWaiter: { count: number; resolve: () => void } | null = null;

  private constructor(apis: { url: string; child: ChildProcess }[], workers: WorkerProcess[], secretKey: string) {
    this.apis = apis.map((a) => a.url);
    this.#apiChildren = apis.map((a) => a.child);
    this.workers = workers;
    this.#auth = { authorization: `Bearer ${secretKey}` };
    for (const w of workers) w.child.on("message", (m: WorkerMessage) => this.#receive(w, m));
  }

  static async start(options: ClusterOptions): Promise<Cluster> {
    // Small pools: several processes share the server's max_connections (100 here) with others.
    const apis = await Promise.all(Array.from({ length: options.apis }, () => spawnApiProcess(options.url, "packages/api/src/main.ts", { DB_POOL_MAX: "6" })));
    const workers = await Promise.all(
      Array.from({ length: options.workers }, async () => {
        const child = fork(WORKER_ENTRY, [], {
          execArgv: ["--import", "tsx"],
          env: { ...process.env, DATABASE_URL: options.url, WORKER_CONCURRENCY: String(options.concurrency), SCALEOUT_HOLD_MS: String(options.holdMs) },
          stdio: ["ignore", "inherit", "inherit", "ipc"],
        });
        const id = await new Promise<string>((resolve, reject) => {
          child.once("exit", (code) => reject(new Error(`a bench worker exited with ${code} before it was ready`)));
          child.on("message", (m: WorkerMessage) => m.type === "ready" && resolve(m.workerId));
        });
        child.removeAllListeners("exit");
        return { child, id, finished: 0, resumedVia: {}, givenBack: 0, flagWrites: 0, claims: 0, emptyClaims: 0, statements: 0, slotSamples: [] } satisfies WorkerProcess;
      }),
    );
    return new Cluster(apis, workers, options.secretKey);
  }

  #receive(w: WorkerProcess, m: WorkerMessage): void {
    if (m.type === "tally") {
      w.finished += m.finished.length;
      w.givenBack += m.givenBack;
      w.flagWrites += m.flagWrites;
      w.claims += m.claims;
      w.emptyClaims += m.emptyClaims;
      w.statements += m.statements;
      for (const [via, n] of Object.entries(m.resumedVia)) w.resumedVia[via] = (w.resumedVia[via] ?? 0) + n;
      for (const id of m.suspended) this.#arrive("suspended", id);
      for (const id of m.finished) this.#arrive("finished", id);
      this.#finishedTotal += m.finished.length;
      if (this.#finishedWaiter && this.#finishedTotal >= this.#finishedWaiter.count) this.#finishedWaiter.resolve();
    } else if (m.type === "resumed") {
      this.#resumed.get(m.tokenId)?.(BigInt(m.at));
      this.#resumed.delete(m.tokenId);
    } else if (m.type === "slots") {
      w.slotSamples.push(m.inUse);
    } else if (m.type === "kinds") {
      this.#kindsWaiters.get(w)?.(m.counts);
      this.#kindsWaiters.delete(w);
    }
  }

  #arrive(kind: "finished" | "suspended", runId: string): void {
    const waiter = this.#waiters[kind].get(runId);
    if (waiter) {
      this.#waiters[kind].delete(runId);
      waiter();
    } else {
      this.#arrived[kind].add(runId);
    }
  }

  /** The statements all workers have sent so far, by kind (their sum over the workers). */
  async statementKinds(): Promise<Record<string, number>> {
    const all = await Promise.all(
      this.workers.map(
        (w) =>
          new Promise<Record<string, number>>((resolve) => {
            this.#kindsWaiters.set(w, resolve);
            w.child.send({ type: "kinds" });
          }),
      ),
    );
    const sum: Record<string, number> = {};
    for (const counts of all) for (const [kind, n] of Object.entries(counts)) sum[kind] = (sum[kind] ?? 0) + n;
    return sum;
  }

  /** Resolves once a worker has reported the run suspended (or finished). */
  until(kind: "finished" | "suspended", runId: string): Promise<void> {
    if (this.#arrived[kind].delete(runId)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters[kind].set(runId, resolve));
  }

  /** Resolves when the code after the wait on `tokenId` ran, with its hrtime. */
  resumed(tokenId: string): Promise<bigint> {
    return new Promise((resolve) => this.#resumed.set(tokenId, resolve));
  }

  /** Resolves once `count` runs have finished since the cluster started. */
  finishedAtLeast(count: number): Promise<void> {
    if (this.#finishedTotal >= count) return Promise.resolve();
    return new Promise((resolve) => (this.#finishedWaiter = { count, resolve }));
  }

  /** CPU used so far (ms, from /proc) by the worker processes and by the API processes, each summed. */
  cpu(): { workers: number; apis: number } {
    const sum = (children: ChildProcess[]) => children.reduce((total, c) => total + (c.pid ? cpuMsOf(c.pid) : 0), 0);
    return { workers: sum(this.workers.map((w) => w.child)), apis: sum(this.#apiChildren) };
  }

  get finishedTotal(): number {
    return this.#finishedTotal;
  }

  #api(): string {
    return this.apis[this.#nextApi++ % this.apis.length]!;
  }

  /** Triggers a run over HTTP (the APIs in turn); returns its id. */
  async trigger(taskId: string, payload: unknown): Promise<string> {
    const res = await postJson(`${this.#api()}/api/v1/tasks/${taskId}/trigger`, JSON.stringify({ payload }), this.#auth);
    if (res.status !== 200) throw new Error(`trigger failed: ${res.status} ${res.text}`);
    return (JSON.parse(res.text) as { id: string }).id;
  }

  /** Completes a token over HTTP (the APIs in turn). */
  async complete(tokenId: string): Promise<void> {
    const res = await postJson(`${this.#api()}/api/v1/waitpoints/tokens/${tokenId}/complete`, '{"data":{"ok":true}}', this.#auth);
    if (res.status !== 200) throw new Error(`complete failed: ${res.status} ${res.text}`);
  }

  tally(): ClusterTally {
    const resumedVia: Record<string, number> = {};
    for (const w of this.workers) for (const [via, n] of Object.entries(w.resumedVia)) resumedVia[via] = (resumedVia[via] ?? 0) + n;
    const sum = (f: (w: WorkerProcess) => number) => this.workers.reduce((total, w) => total + f(w), 0);
    return {
      finished: this.workers.map((w) => w.finished),
      resumedVia,
      givenBack: sum((w) => w.givenBack),
      flagWrites: sum((w) => w.flagWrites),
      claims: sum((w) => w.claims),
      emptyClaims: sum((w) => w.emptyClaims),
      statements: sum((w) => w.statements),
    };
  }

  /** Every worker reports its slots in use every `everyMs` (0: stops); samples are kept per worker. */
  sampleSlots(everyMs: number): void {
    for (const w of this.workers) {
      if (everyMs > 0) w.slotSamples = [];
      w.child.send({ type: "sample", everyMs });
    }
  }

  /** Mean slots in use over the samples, summed over the workers. */
  meanSlotsInUse(): number {
    return this.workers.reduce((sum, w) => sum + w.slotSamples.reduce((a, b) => a + b, 0) / Math.max(1, w.slotSamples.length), 0);
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            w.child.once("exit", () => resolve());
            w.child.send({ type: "stop" });
          }),
      ),
    );
    await Promise.all(
      this.#apiChildren.map(
        (child) =>
          new Promise<void>((resolve) => {
            child.once("exit", () => resolve());
            child.kill("SIGTERM");
          }),
      ),
    );
  }
}

/** Differences between two tallies. */
export function tallyDelta(before: ClusterTally, after: ClusterTally): ClusterTally {
  const resumedVia: Record<string, number> = {};
  for (const [via, n] of Object.entries(after.resumedVia)) resumedVia[via] = n - (before.resumedVia[via] ?? 0);
  return {
    finished: after.finished.map((n, i) => n - (before.finished[i] ?? 0)),
    resumedVia,
    givenBack: after.givenBack - before.givenBack,
    flagWrites: after.flagWrites - before.flagWrites,
    claims: after.claims - before.claims,
    emptyClaims: after.emptyClaims - before.emptyClaims,
    statements: after.statements - before.statements,
  };
}
