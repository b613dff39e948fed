import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createPool } from "@svc/runtime/db";
import { systemClock, type Clock } from "@svc/runtime/engine";
import type { CliIo } from "../io.ts";
import { devBanner } from "./banner.ts";
import { portProblem } from "./port.ts";
import { isLoadFailedMessage, spawnService, type LoadedCode, type ServiceChild } from "./children.ts";
import { devLogStream } from "./dev-logs.ts";
import { openDevDatabase, prepareDevProject } from "./database.ts";
import { DevState } from "./state.ts";
import { watchStarter } from "./starter.ts";
import { checkUnservedEvery, UNSERVED_CHECK_MS, UnservedNotices } from "./unserved-notices.ts";
import { watchCode, type CodeWatcher, type WatchedCode } from "./watch.ts";

export interface DevOptions {
  /** svc.config.ts (or .js/.mjs): names the task folders; its folder is the project watched for changes. */
  configPath: string;
  /** `.svc/` by default: the encryption key, the embedded Postgres's data, runtime.json. */
  stateDir: string;
  env: NodeJS.ProcessEnv;
  io: CliIo;
  /** Reload the worker when a file it loaded changes, or a task file is added (default true). */
  watch?: boolean;
  clock?: Clock;
}

/**
 * `svc dev`: svc for one project on this machine. Uses DATABASE_URL, or an embedded Postgres kept
 * in `.svc/pg`; migrates; creates the default project and prints its dev key; runs the API and a
 * worker with the project's tasks as child processes, and replaces the worker when a task file
 * changes (the new one starts first; the old one finishes its runs in flight). Says when runs are
 * queued for a task no worker serves (a typo in a task id, a task not exported).
 *
 * Stopping: Ctrl-C or SIGTERM drains (the runs in flight finish, then the children exit, then the
 * embedded Postgres stops); a second one stops everything at once.
 */
export class DevSupervisor {
  private api: ServiceChild | undefined;
  private worker: ServiceChild | undefined;
  /** Workers replaced by a reload, finishing their runs in flight. */
  private readonly retiring = new Set<ServiceChild>();
  private watcher: CodeWatcher | undefined;
  /** What the watcher watches: the code of the serving worker, plus what a worker that failed to load got to. */
  private watched: WatchedCode = { files: [], taskDirs: [] };
  private warnedAboutEsModules = false;
  private configPath = "";
  private stopDatabase: (() => Promise<void>) | undefined;
  /** Stops the check for queued runs no worker serves, and its connection. */
  private stopUnservedCheck: (() => Promise<void>) | undefined;
  private stopping: Promise<number> | undefined;
  private reloading: Promise<void> | undefined;
  /** A worker started but not yet serving. */
  private pending: ServiceChild | undefined;
  private reloadAgain = false;
  private signals = 0;
  private childEnv: { api: NodeJS.ProcessEnv; worker: NodeJS.ProcessEnv } | undefined;

  private finished!: (code: number) => void;
  /** Resolves with the exit code once everything has stopped. */
  readonly stopped = new Promise<number>((resolve) => (this.finished = resolve));

  constructor(private readonly options: DevOptions) {}

  /** Starts everything; resolves once the API and the first worker serve (or the worker failed to load). */
  async start(): Promise<void> {
    const { env, io } = this.options;
    const configPath = (this.configPath = resolve(this.options.configPath));
    if (!existsSync(configPath)) throw new DevError(`${this.options.configPath} does not exist: run \`svc init\` in your project, or pass --config <path>`);
    const state = new DevState(this.options.stateDir);
    const port = Number(env.PORT ?? 3030);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new DevError(`PORT=${env.PORT} is not a port number`);
    const host = env.HOST ?? "127.0.0.1";
    const problem = await portProblem(port, host);
    if (problem) throw new DevError(problem);
    const encryptionKey = env.SVC_ENCRYPTION_KEY ?? state.encryptionKey();

    const database = await openDevDatabase(state, env, dirname(configPath), io);
    this.stopDatabase = database.stop;
    const databaseUrl = database.url;
    const project = await prepareDevProject(databaseUrl, encryptionKey, this.options.clock ?? systemClock, io);
    const devKey = project.environments.dev.secretKey;
    const apiUrl = env.SVC_PUBLIC_URL ?? `http://localhost:${port}`;
    state.writeRuntime({ databaseUrl, encryptionKey, apiUrl, secretKey: devKey });
    io.stdout(devBanner({ apiUrl, projectRef: project.projectRef, devKey, configPath }));

    const common = { ...env, DATABASE_URL: databaseUrl, SVC_ENCRYPTION_KEY: encryptionKey };
    this.childEnv = {
      api: { ...common, PORT: String(port), HOST: host, SVC_PUBLIC_URL: apiUrl },
      // WORKER_LOG_RUNS: a line per run start, wait, resume, failure and completion (run-lifecycle-log.ts).
      worker: { ...common, SERVICE_API_URL: env.SERVICE_API_URL ?? apiUrl, SVC_PUBLIC_URL: apiUrl, SERVICE_SECRET_KEY: env.SERVICE_SECRET_KEY ?? devKey, SVC_CONFIG: configPath, WORKER_LOG_RUNS: env.WORKER_LOG_RUNS ?? "true" },
    };
    this.api = spawnService("api", "api", this.childEnv.api, devLogStream("api", env));
    void this.api.exited.then((code) => {
      if (this.stopping) return;
      io.stderr(`the API exited (${code}); stopping svc`);
      void this.stop(1);
    });
    if (this.options.watch !== false) {
      this.watcher = watchCode(dirname(configPath), (files) => this.reload(files), { onError: (error) => io.stderr(`watching for changes: ${error.message}`) });
    }
    const worker = this.startWorker("start");
    await Promise.all([this.api.ready, worker.ready.catch(() => {})]);
    if (!this.stopping) this.checkUnserved(databaseUrl, project.environments.dev.id);
  }

  /** Says when runs are queued for a task no live worker serves (unserved-notices.ts), from now on. */
  private checkUnserved(databaseUrl: string, environmentId: string): void {
    const { io } = this.options;
    const pool = createPool(databaseUrl, { max: 1, onError: (error) => io.stderr(`database connection: ${error.message}`) });
    const notices = new UnservedNotices({ db: pool, environmentId, clock: this.options.clock ?? systemClock, print: (line) => io.stdout(line) });
    const check = checkUnservedEvery(notices, UNSERVED_CHECK_MS, (error) => io.stderr(`looking for runs no worker serves: ${error.message}`));
    this.stopUnservedCheck = async () => {
      await check.stop();
      await pool.end();
    };
  }

  /** Installs the signal handlers of a terminal session: one Ctrl-C drains, a second stops at once. */
  handleSignals(): void {
    const onSignal = () => {
      if (++this.signals === 1) {
        this.options.io.stdout("\nstopping: letting the runs in flight finish (Ctrl-C again to stop at once)");
        void this.stop(0);
        return;
      }
      // A second signal is passed on: each child takes it as "stop now".
      for (const child of this.children()) child.terminate();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    watchStarter(() => void this.stop(0));
  }

  /** Asks every child to drain (one SIGTERM each), waits for them, then stops the embedded Postgres. Resolves with the exit code. */
  stop(code: number): Promise<number> {
    this.stopping ??= (async () => {
      await this.watcher?.close();
      await this.stopUnservedCheck?.();
      const children = this.children();
      for (const child of children) child.terminate();
      await Promise.all(children.map((c) => c.exited));
      await this.stopDatabase?.().catch((error: unknown) => this.options.io.stderr(`could not stop the embedded Postgres: ${(error as Error).message}`));
      this.finished(code);
      return code;
    })();
    return this.stopping;
  }

  private children(): ServiceChild[] {
    // A set: a child listed twice would get two SIGTERMs, which means "stop at once".
    return [...new Set([this.api, this.worker, this.pending, ...this.retiring])].filter((c): c is ServiceChild => c !== undefined);
  }

  /** Starts a worker; once it serves it replaces the current one, which finishes its runs in flight. */
  private startWorker(reason: "start" | "reload"): ServiceChild {
    const worker = spawnService("worker", "worker", this.childEnv!.worker, devLogStream("worker", this.options.env));
    void worker.exited.then((code) => {
      this.retiring.delete(worker);
      if (this.stopping || this.worker !== worker) return;
      this.worker = undefined;
      this.options.io.stderr(`the worker exited (${code}); it starts again when a file it loaded changes`);
    });
    this.pending = worker;
    // Each outcome is said once the watcher watches what the worker loaded: a save after it counts.
    let watching: Promise<void> = Promise.resolve();
    worker.process.on("message", (message) => {
      if (!isLoadFailedMessage(message)) return;
      // Until a worker loads, watch what this one got to (the file with the error among it), and
      // for want of its task folders, the project's folder for new task files.
      const taskDirs = this.watched.taskDirs.length > 0 ? this.watched.taskDirs : [dirname(this.configPath)];
      watching = this.watchLoaded({ files: [...new Set([...this.watched.files, ...message.code.files])], taskDirs, seesEsModules: message.code.seesEsModules });
    });
    const settled = worker.ready.then(
      async (ready) => {
        if (ready.code) await this.watchLoaded(ready.code);
        const previous = this.worker;
        this.worker = worker;
        if (previous && previous !== worker) {
          this.retiring.add(previous);
          previous.terminate();
        }
        if (reason === "reload") this.options.io.stdout(`worker reloaded: ${ready.taskIds?.join(", ") || "no tasks"} (version ${ready.workerVersion})`);
        // Said once the files are watched: a save from now on reloads (the worker's own "started" comes before).
        else if (this.watcher && ready.code) this.options.io.stdout(`watching ${ready.code.files.length} files the tasks loaded for changes`);
      },
      async () => {
        await watching;
        if (this.stopping) return;
        this.options.io.stderr(this.worker?.alive() ? "the changed tasks did not load (see above); the previous worker keeps serving" : "the tasks did not load (see above); fix them and save again");
      },
    );
    this.reloading = settled.then(() => {
      this.pending = undefined;
      this.reloading = undefined;
      if (this.reloadAgain) {
        this.reloadAgain = false;
        this.reload(["(changed during the reload)"]);
      }
    });
    return worker;
  }

  /** Watches what a worker loaded from now on; resolves once it is watched. */
  private watchLoaded(code: LoadedCode): Promise<void> {
    if (!this.watcher || this.stopping) return Promise.resolve();
    this.watched = { files: code.files, taskDirs: code.taskDirs };
    if (!code.seesEsModules && !this.warnedAboutEsModules) {
      this.warnedAboutEsModules = true;
      this.options.io.stderr(`Node ${process.version} cannot tell svc dev which ES modules the worker imports: only task files and CommonJS modules reload it (Node 22.15 or later: every file it imports)`);
    }
    return this.watcher.watch(this.watched);
  }

  /** A changed file: starts a worker with the new code; the old one serves until the new one is ready. */
  private reload(files: string[]): void {
    if (this.stopping) return;
    if (this.reloading) {
      this.reloadAgain = true;
      return;
    }
    this.options.io.stdout(`changed: ${files.slice(0, 5).join(", ")}${files.length > 5 ? ` and ${files.length - 5} more` : ""}; reloading the worker`);
    this.startWorker("reload");
  }
}

/** A problem the user can fix, printed as one line. */
export class DevError extends Error {}
