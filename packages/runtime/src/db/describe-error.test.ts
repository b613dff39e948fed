import { describe, expect, inject, it } from "vitest";
import pg from "pg";
import { createServer } from "node:net";
import { describeDatabaseError, redactDatabaseUrl } from "./describe-error.ts";

const BASE = inject("adminUrl");

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** What connecting to `url` with node-postgres fails with (the test fails if it connects). */
async function connectError(url: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  const error = await client.connect().then(
    () => new Error("connected"),
    (e: unknown) => e,
  );
  await client.end().catch(() => {});
  expect((error as Error).message).not.toBe("connected");
  return error;
}

/** The machine's Postgres with another user, password or database. */
function variant(change: (url: URL) => void): string {
  const url = new URL(BASE);
  change(url);
  return url.toString();
}

describe("describeDatabaseError", () => {
  it("says a refused connection is an outage to start Postgres for, naming host and port but never the password", async () => {
    const port = await closedPort();
    const url = `postgres://svc:s3cret-pw@127.0.0.1:${port}/app`;
    const described = describeDatabaseError(await connectError(url), url);
    expect(described).toEqual({
      kind: "unreachable",
      transient: true,
      message: `cannot reach Postgres at 127.0.0.1:${port} (connection refused): is it running? Start it, or run \`svc dev\` (in svc's repository: \`pnpm start\`), which runs an embedded one, or set DATABASE_URL to a running server`,
    });
    expect(described!.message).not.toContain("s3cret");
  });

  it("says a host that does not resolve cannot be reached", async () => {
    const url = "postgres://svc:pw@no-such-host.invalid:5433/app";
    const described = describeDatabaseError(await connectError(url), url);
    expect(described).toMatchObject({ kind: "unreachable", transient: true });
    expect(described!.message).toMatch(/^cannot reach Postgres at no-such-host\.invalid:5433 \(host "no-such-host\.invalid" not found\)/);
  });

  it("says how to create a database that does not exist, and that it is no outage", async () => {
    const url = variant((u) => (u.pathname = "/svc_no_such_database"));
    const { hostname, port, username } = new URL(url);
    const described = describeDatabaseError(await connectError(url), url);
    expect(described).toEqual({
      kind: "missing_database",
      transient: false,
      message:
        `database "svc_no_such_database" does not exist on ${hostname}:${port || 5432}: create it with ` +
        `\`createdb -h ${hostname} -p ${port || 5432} -U ${username} svc_no_such_database\` or point DATABASE_URL at an existing database`,
    });
  });

  it("says the server refused the user (a role that does not exist), and that it is no outage", async () => {
    const url = variant((u) => {
      u.username = "svc_no_such_role";
      u.password = "hunter2-secret";
    });
    const described = describeDatabaseError(await connectError(url), url);
    expect(described).toMatchObject({ kind: "refused_credentials", transient: false });
    expect(described!.message).toMatch(/^Postgres at .+ refused user "svc_no_such_role" \(.*svc_no_such_role.*\): check the user and password in DATABASE_URL$/);
    expect(described!.message).not.toContain("hunter2");
  });

  it("says a wrong password was refused", () => {
    const url = "postgres://app:wrong%40pw@db.internal:6543/app";
    const error = Object.assign(new Error('password authentication failed for user "app"'), { code: "28P01" });
    expect(describeDatabaseError(error, url)).toEqual({
      kind: "refused_credentials",
      transient: false,
      message: 'Postgres at db.internal:6543 refused user "app" (password authentication failed for user "app"): check the user and password in DATABASE_URL',
    });
    const noPassword = new Error("SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string");
    expect(describeDatabaseError(noPassword, "postgres://app@db.internal/app")?.message).toBe(
      'Postgres at db.internal:5432 refused user "app" (the server asks for a password and DATABASE_URL has none): check the user and password in DATABASE_URL',
    );
  });

  it("reads a code from a cause or an AggregateError (a host with several addresses)", () => {
    const url = "postgres://localhost/app";
    const refused = Object.assign(new Error("connect ECONNREFUSED ::1:5432"), { code: "ECONNREFUSED" });
    expect(describeDatabaseError(new AggregateError([refused, refused]), url)?.kind).toBe("unreachable");
    expect(describeDatabaseError(new Error("migrate failed", { cause: refused }), url)?.message).toMatch(/^cannot reach Postgres at localhost:5432 \(connection refused\)/);
    const timedOut = Object.assign(new Error("connect ETIMEDOUT 10.0.0.1:5432"), { code: "ETIMEDOUT" });
    expect(describeDatabaseError(timedOut, url)?.message).toMatch(/\(connection timed out\)/);
    expect(describeDatabaseError(new Error("timeout exceeded when trying to connect"), url)?.kind).toBe("unreachable");
  });

  it("says a server that answers but takes no connections now is a passing outage", () => {
    const starting = Object.assign(new Error("the database system is starting up"), { code: "57P03" });
    expect(describeDatabaseError(starting, "postgres://u@db:5432/app")).toEqual({
      kind: "unavailable",
      transient: true,
      message: "Postgres at db:5432 is not taking connections right now (the database system is starting up)",
    });
    expect(describeDatabaseError(new Error("Connection terminated unexpectedly"), "postgres://u@db/app")?.kind).toBe("unavailable");
  });

  it("leaves errors that are not about connecting undescribed", () => {
    const url = "postgres://u:pw@db/app";
    expect(describeDatabaseError(Object.assign(new Error("syntax error"), { code: "42601" }), url)).toBeUndefined();
    expect(describeDatabaseError(new Error("boom"), url)).toBeUndefined();
    expect(describeDatabaseError(null, url)).toBeUndefined();
  });

  it("falls back to the default port, the user's database and a placeholder for an unparsable URL", () => {
    const missing = Object.assign(new Error('database "alice" does not exist'), { code: "3D000" });
    expect(describeDatabaseError(missing, "postgres://alice@db")?.message).toBe(
      'database "alice" does not exist on db:5432: create it with `createdb -h db -p 5432 -U alice alice` or point DATABASE_URL at an existing database',
    );
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    const unparsable = describeDatabaseError(refused, "not a url :: s3cret")?.message;
    expect(unparsable).toMatch(/^cannot reach Postgres at the address DATABASE_URL names \(it is not a valid URL\) \(connection refused\)/);
    expect(unparsable).not.toContain("s3cret");
  });
});

describe("redactDatabaseUrl", () => {
  it("replaces the URL's password, as written and decoded, and leaves text without one alone", () => {
    const url = "postgres://app:p%40ss-word@db/app";
    expect(redactDatabaseUrl("failed for postgres://app:p%40ss-word@db/app and p@ss-word", url)).toBe("failed for postgres://app:***@db/app and ***");
    expect(redactDatabaseUrl("nothing secret", "postgres://app@db/app")).toBe("nothing secret");
  });
});
