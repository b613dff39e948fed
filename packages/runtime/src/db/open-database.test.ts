import { createServer, connect, type Server } from "node:net";
import { describe, expect, inject, it } from "vitest";
import { systemClock } from "../clock.ts";
import { createTestDatabase } from "../testing/database.ts";
import { openDatabase } from "./open-database.ts";

/** The process exit openDatabase asked for, thrown instead of ending the test process. */
class Exited extends Error {
  constructor(readonly code: number) {
    super(`exit(${code})`);
  }
}

type Line = { level: "info" | "warn" | "error"; object: Record<string, unknown>; message: string };

/** A logger that keeps its lines, and lets a test await the first line matching a predicate. */
function recordingLogger() {
  const lines: Line[] = [];
  const waiting: { test: (line: Line) => boolean; resolve: (line: Line) => void }[] = [];
  const log = (level: Line["level"]) => (object: object, message: string) => {
    const line = { level, object: object as Record<string, unknown>, message };
    lines.push(line);
    for (const w of waiting.splice(0)) (w.test(line) ? w.resolve(line) : waiting.push(w));
  };
  return {
    lines,
    logger: { info: log("info"), warn: log("warn"), error: log("error") },
    next: (test: (line: Line) => boolean) => new Promise<Line>((resolve) => waiting.push({ test, resolve })),
  };
}

function open(url: string, logger: ReturnType<typeof recordingLogger>["logger"]) {
  return openDatabase({
    url,
    max: 2,
    applicationName: "svc-test",
    logger,
    clock: systemClock,
    errorMessage: "test error",
    exit: (code) => {
      throw new Exited(code);
    },
  });
}

function withUrl(change: (url: URL) => void): string {
  const url = new URL(inject("adminUrl"));
  change(url);
  return url.toString();
}

async function listen(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

describe("openDatabase", () => {
  it("ends the process (exit 1) with the sentence, and no retry, when the database does not exist", async () => {
    const { lines, logger } = recordingLogger();
    const url = withUrl((u) => (u.pathname = "/svc_no_such_database"));
    const error = await open(url, logger).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Exited);
    expect((error as Exited).code).toBe(1);
    expect(lines).toEqual([
      { level: "error", object: { where: "startup", kind: "missing_database" }, message: expect.stringMatching(/^database "svc_no_such_database" does not exist on .+: create it with `createdb /) },
    ]);
  });

  it("ends the process (exit 1) with the sentence when the server refuses the user", async () => {
    const { lines, logger } = recordingLogger();
    const url = withUrl((u) => {
      u.username = "svc_no_such_role";
      u.password = "hunter2-secret";
    });
    await expect(open(url, logger)).rejects.toBeInstanceOf(Exited);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: "error", object: { kind: "refused_credentials" }, message: expect.stringContaining('refused user "svc_no_such_role"') });
    expect(JSON.stringify(lines)).not.toContain("hunter2");
  });

  it("waits out a refused connection, saying so, and opens the database once Postgres answers", async () => {
    const db = await createTestDatabase();
    // A port nothing listens on yet; later a proxy to the real Postgres listens there.
    const placeholder = createServer();
    const port = await listen(placeholder);
    await new Promise((resolve) => placeholder.close(resolve));
    const target = new URL(db.url);
    const url = withUrl((u) => {
      u.hostname = "127.0.0.1";
      u.port = String(port);
      u.pathname = target.pathname;
    });
    const { lines, logger, next } = recordingLogger();
    const warned = next((line) => line.level === "warn");
    const opening = open(url, logger);
    const warning = await warned;
    expect(warning).toEqual({
      level: "warn",
      object: { where: "startup", kind: "unreachable", retrying: true, suppressed: 0 },
      message: `cannot reach Postgres at 127.0.0.1:${port} (connection refused): is it running? Start it, or run \`svc dev\` (in svc's repository: \`pnpm start\`), which runs an embedded one, or set DATABASE_URL to a running server`,
    });

    const proxy = createServer((client) => {
      const server = connect(Number(target.port || 5432), target.hostname);
      client.pipe(server).pipe(client);
      const close = () => {
        client.destroy();
        server.destroy();
      };
      client.on("error", close);
      server.on("error", close);
    });
    await listen(proxy, port);
    try {
      const { db: pool } = await opening;
      expect((await pool.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      await pool.end();
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
      await db.drop();
    }
    expect(lines.filter((line) => line.level === "error")).toEqual([]);
  });
});
