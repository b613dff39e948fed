import { randomUUID } from "node:crypto";
import {
  BUILT_IN_DUE_WORK,
  CHANNELS,
  lapsedLeases,
  parseResumePayload,
  type CreateToken,
  type DueWork,
  type EngineDeps,
  type Environment,
  withTransaction,
} from "@svc/runtime/engine";
import type { Task } from "@svc/runtime/sdk";
import { claimFastResumes, claimStarts, renewLeases } from "./execution/claim.ts";
import { finishExecutions, type Finish } from "./execution/finish.ts";
import { abortLostExecutions } from "./execution/lost-executions.ts";
import { acceptOffers, declineOffers, loadOffer, parseOffer, type Offer } from "./execution/offers.ts";
import { offersChannel, registerWorker, renewWorker, unregisterWorker, type WorkerRecord } from "./registry/workers.ts";
import { MicroBatcher } from "@svc/runtime/engine";
import { createPool, NotificationListener, retryOnConflict, retryWrite } from "@svc/runtime/db";
import { executeRun, type Dispatch } from "./execution/execute-run.ts";
import { ActiveExecutions } from "./execution/active-executions.ts";
import type { ExecutorDeps } from "./execution/executor-deps.ts";
import { WorkerEvents } from "./events.ts";
import { BOSS_NOTIFY_CHANNEL, JobConsumer, resumeQueueName, startQueueName, type ConsumedJob, type PgBoss, type PgBossDispatcher } from "@svc/queue";
import { queueOf, registerTasks } from "./tasks/register-tasks.ts";
import { TimerLoop } from "./timers/timer-loop.ts";

export interface WorkerOptions {
  engine: EngineDeps;
  boss: PgBoss;
  dispatcher: PgBossDispatcher;
  databaseUrl: string;
  environment: Environment;
  tasks: Task[];
  workerVersion: string;
  concurrency: number;
  createToken: CreateToken;
  /** Extra time-driven work (e.g. schedules). */
  dueWork?: DueWork[];
  /** Runs before each execution (e.g. loads env vars into process.env). */
  prepareEnvironment?: () => Promise<void>;
  /** Runs once after tasks are registered (e.g. declarative schedules). */
  onRegistered?: (tasks: Task[]) => Promise<void>;
  /** false in tests that drive time with `worker.timers.tick()`. @default true */
  timerLoop?: boolean;
  pollIntervalMs?: number;
  /** The timer loop's longest sleep when nothing is due sooner (it also wakes on NOTIFY). @default 1000 */
  timerMaxSleepMs?: number;
  leaseMs?: number;
  onError?: (error: unknown, where: string) => void;
}

export interface Worker {
  readonly id: string;
  readonly events: WorkerEvents;
  readonly timers: TimerLoop;
  /** What the lease timer does every `leaseMs / 3` (tests with a FakeClock call it directly). */
  checkExecutions(): Promise<void>;
  start(): Promise<void>;
  /** Stops claiming, lets in-flight runs finish, then stops. */
  drain(): Promise<void>;
  /** Stops at once; in-flight runs are recovered by other workers (tests of crash recovery). */
  abandon(): Promise<void>;
}

/** A worker process's engine room: claims runs for one environment and executes them. */
export function createWorker(options: WorkerOptions): Worker {
  const id = `worker_${randomUUID().slice(0, 8)}`;
  const events = new WorkerEvents();
  const onError = (error: unknown, where: string) => {
    events.emit("error", { error, where });
    options.onError?.(error, where);
  };
  const active = new ActiveExecutions();
  const leaseMs = options.leaseMs ?? 15_000;
  const tasks = new Map(options.tasks.map((t) => [t.id, t]));
  const taskIds = [...tasks.keys()];
  const env = options.environment;
  // Batched statements over many runs can deadlock with a cancel locking a run tree: run again.
  const startClaims = new MicroBatcher((items: { runId: string; claimToken: string; jobId: string }[]) => retryWrite(() =>
    claimStarts(options.engine.db, items.map((i) => ({ ...i, workerId: id, workerVersion: options.workerVersion, now: options.engine.clock.now() })), { id, version: options.workerVersion }, options.engine.clock.now())),
    500,
    "microtask",
  );
  // Fast-path claims commit asynchronously (no wait for the WAL flush, ~0.2 ms of each resume).
  // Safe: a claim lost in a database crash leaves the run WAITING with its resume due, so it is
  // resumed again; and any later durable commit of the execution (a step, the finish) flushes
  // the WAL up to and including the claim first.
  const claimPool = createPool(options.databaseUrl, { max: 4, applicationName: "svc-worker-claim", settings: { synchronous_commit: "off" }, onError: (error) => onError(error, "pool") });
  const fastResumeClaims = new MicroBatcher((items: { runId: string; claimToken: string }[]) => retryWrite(() =>
    claimFastResumes(claimPool, items, { id, version: options.workerVersion, tasks: taskIds }, options.engine.clock.now(), leaseMs)),
    500,
    "microtask",
  );
  // Offers this worker has no slot for: given back together (a completion can offer many at once).
  const declines = new MicroBatcher(async (items: { runId: string; claimToken: string }[]) => {
    await retryWrite(() => declineOffers(options.engine.db, env.id, items, options.engine.clock.now()));
    return items.map(() => undefined);
  });
  // Taking an offer is written after the code has started (setImmediate), off the resume's path.
  // Like every statement over many runs, it can deadlock with another one (a completion offering
  // many runs, lease renewals): run again.
  const offerAcceptances = new MicroBatcher((tokens: string[]) => retryWrite(() => acceptOffers(claimPool, tokens, options.engine.clock.now(), leaseMs)));
  const finishes = new MicroBatcher((items: Finish[]) => retryWrite(() => finishExecutions(options.engine.db, items, options.engine.clock.now())));
  const executorDeps: ExecutorDeps = {
    engine: options.engine,
    worker: { id, version: options.workerVersion, environment: env, tasks, taskIds },
    events,
    hooks: { createToken: options.createToken, prepareEnvironment: options.prepareEnvironment },
    batchers: { startClaims, fastResumeClaims, offerAcceptances, finishes },
  };
  let fastPathInFlight = 0;
  /** Set by drain() and abandon(): from then on this worker takes no new work, fast path included. */
  let stopping = false;
  let fastPathIdle: (() => void) | null = null;
  const consumer = new JobConsumer(options.boss, {
    concurrency: options.concurrency,
    pollIntervalMs: options.pollIntervalMs ?? 1000,
    heartbeatIntervalMs: 4000,
    externalInFlight: () => fastPathInFlight,
    handle: (job: ConsumedJob, release) =>
      executeRun(executorDeps, active, job.data.kind === "start" ? { kind: "start", runId: job.data.runId, jobId: job.id } : { kind: "resume", runId: job.data.runId, jobId: job.id }, release),
    onError: (error) => onError(error, "consumer"),
    // One fetch at a time per limited queue, across all workers (the lock ends with the transaction).
    serializeFetch: (queue, fetch) =>
      withTransaction(options.engine.db, async (tx) => {
        await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`svc-queue-fetch:${queue}`]);
        return fetch({ executeSql: (text, values) => tx.query(text, values) });
      }),
  });
  const timers = new TimerLoop(options.engine, [...BUILT_IN_DUE_WORK, lapsedLeases, ...(options.dueWork ?? [])], {
    maxSleepMs: options.timerMaxSleepMs ?? 1000,
    onError: (error) => onError(error, "timers"),
  });
  let listener: NotificationListener | null = null;
  let leaseTimer: NodeJS.Timeout | null = null;

  /** The resume fast path: claim directly on NOTIFY, no pg-boss fetch. */
  function resumeNow(runIds: string[]) {
    for (const runId of runIds) {
      // Left for later: the timer loop hands a resume nobody took to pg-boss when it is due.
      if (stopping || consumer.freeSlots() <= 0) return;
      runLeased({ kind: "resume", runId, jobId: null });
    }
  }

  /** Runs a resume that holds a lease, not a pg-boss job (fast path, offer), in a slot of its own. */
  function runLeased(dispatch: Dispatch) {
    fastPathInFlight++;
    executeRun(executorDeps, active, dispatch)
      .catch((error) => onError(error, "resume"))
      .finally(() => {
        fastPathInFlight--;
        if (fastPathInFlight === 0) fastPathIdle?.();
        consumer.slotFreed();
      });
  }

  /**
   * A resume a completion offered to this worker (already claimed for it): run it now, or give it
   * back at once (no free slot, stopping) so that another worker or pg-boss takes it.
   */
  function takeOffer(payload: string) {
    let offer: Offer;
    try {
      offer = parseOffer(payload);
    } catch (error) {
      onError(error, "offer");
      return;
    }
    const [runId, claimToken] = "claim" in offer ? [offer.claim.run.id, offer.claim.run.claim_token!] : [offer.runId, offer.claimToken];
    if (stopping || consumer.freeSlots() <= 0) {
      declines.add({ runId, claimToken }).catch((error) => onError(error, "offer"));
      return;
    }
    const claim = "claim" in offer ? offer.claim : loadOffer(options.engine.db, claimToken);
    runLeased({ kind: "offer", runId, claimToken, claim });
  }

  const record: WorkerRecord = { id, environmentId: env.id, tasks: taskIds, version: options.workerVersion };
  const aliveUntil = () => new Date(options.engine.clock.now().getTime() + leaseMs);
  /** Enters this worker in the registry completions offer resumes from (again after a reconnect). */
  async function register() {
    const lock = listener?.sessionLock;
    if (lock && !stopping) await registerWorker(options.engine.db, record, lock, aliveUntil());
  }

  async function start() {
    await registerTasks(options.engine.db, env.id, options.tasks, options.workerVersion, options.engine.clock.now());
    const queues = new Map<string, number | null>();
    for (const task of options.tasks) {
      // Tasks naming one queue share it: its limit is the strictest any of them declares (as
      // svc_complete_waitpoint treats a queue as limited when any of its tasks has a limit). Taking
      // the last task's setting let a task declared without a limit lift it for the whole queue.
      const limit = task.queue?.concurrencyLimit ?? null;
      const declared = queues.get(queueOf(task)) ?? null;
      queues.set(queueOf(task), declared === null ? limit : limit === null ? declared : Math.min(declared, limit));
      if (!queues.has(`task/${task.id}`)) queues.set(`task/${task.id}`, null);
    }
    for (const [queue, limit] of queues) {
      const name = startQueueName(env.id, queue);
      await options.dispatcher.ensureQueue(name);
      consumer.subscribe({ name, concurrencyLimit: limit });
    }
    const resumeQueue = resumeQueueName(env.id);
    await options.dispatcher.ensureQueue(resumeQueue);
    consumer.subscribe({ name: resumeQueue });
    await options.onRegistered?.(options.tasks);

    listener = new NotificationListener({
      url: options.databaseUrl,
      channels: [CHANNELS.resume, CHANNELS.runCanceled, CHANNELS.timers, BOSS_NOTIFY_CHANNEL, offersChannel(id)],
      onNotification(channel, payload) {
        if (channel === BOSS_NOTIFY_CHANNEL) return consumer.notify(payload);
        if (channel === CHANNELS.timers) return timers.wake();
        if (channel === CHANNELS.runCanceled) return active.abortRun(payload, new Error("run canceled"));
        if (channel === offersChannel(id)) return takeOffer(payload);
        if (channel === CHANNELS.resume) {
          const parsed = parseResumePayload(payload);
          if (parsed && parsed.environmentId === env.id) resumeNow(parsed.runIds);
        }
      },
      onReconnect: () => {
        consumer.notify();
        timers.wake();
        // Offers follow the LISTEN connection: the registry must name the new one.
        register().catch((error) => onError(error, "registry"));
      },
      onError: (error) => onError(error, "listener"),
      holdSessionLock: true,
    });
    await listener.start();
    await register();
    consumer.start();
    if (options.timerLoop !== false) timers.start();
    leaseTimer = setInterval(() => void checkExecutions(), Math.max(1000, Math.floor(leaseMs / 3)));
    leaseTimer.unref();
  }

  /**
   * Renews the leases of fast-path executions and this worker's registry entry, and aborts
   * executions whose run was canceled or taken over.
   */
  async function checkExecutions(): Promise<void> {
    await Promise.all([
      renewWorker(options.engine.db, id, aliveUntil())
        .then((present) => (present ? undefined : register()))
        .catch((error) => onError(error, "registry")),
      retryOnConflict(() => renewLeases(options.engine.db, active.leasedClaimTokens(), options.engine.clock.now(), leaseMs)).catch((error) => onError(error, "leases")),
      abortLostExecutions(options.engine.db, active).catch((error) => onError(error, "leases")),
    ]);
  }

  async function stopBackground() {
    if (leaseTimer) clearInterval(leaseTimer);
    await timers.stop();
    await listener?.stop();
    if (!claimPool.ending) await claimPool.end();
  }

  return {
    id,
    events,
    timers,
    checkExecutions,
    start,
    async drain() {
      stopping = true;
      // No more offers; one already on its way is given back (takeOffer sees `stopping`).
      await unregisterWorker(options.engine.db, id).catch((error) => onError(error, "registry"));
      await consumer.drain();
      // Fast-path executions end by finishing, suspending again or being abandoned: wait for the count.
      if (fastPathInFlight > 0) await new Promise<void>((resolve) => (fastPathIdle = resolve));
      await stopBackground();
    },
    async abandon() {
      stopping = true;
      consumer.abandon();
      for (const execution of active.all()) execution.abort.abort(new Error("worker stopped"));
      await stopBackground();
    },
  };
}
