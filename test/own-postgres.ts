import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../scripts/embedded-postgres.ts";
import { PostgresServer, type StopMode } from "../packages/cli/src/dev/postgres-server.ts";

export type { StopMode };

/**
 * A Postgres server of a test's own, for tests that stop and start the database under running
 * processes (never the machine's shared server): data in a temporary folder, a free port, fsync
 * off; `stop(mode)` is `pg_ctl stop -m mode`, `start()` brings it back on the same port.
 */
export class OwnPostgres {
  private constructor(private readonly server: PostgresServer, private readonly dir: string) {}

  static async create(): Promise<OwnPostgres> {
    const dir = mkdtempSync(join(tmpdir(), "svc-own-pg-"));
    const server = await PostgresServer.open(join(dir, "data"), await freePort(), { settings: { fsync: "off", max_connections: "200" } });
    await server.start();
    return new OwnPostgres(server, dir);
  }

  get url(): string {
    return this.server.url;
  }

  start(): Promise<void> {
    return this.server.start();
  }

  stop(mode: StopMode): Promise<void> {
    return this.server.stop(mode);
  }

  async destroy(): Promise<void> {
    await this.server.stop("immediate").catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}
