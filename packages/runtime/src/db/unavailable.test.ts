import { describe, expect, it } from "vitest";
import pg from "pg";
import { createServer } from "node:net";
import { isDatabaseUnavailable, retryWhileUnavailable } from "./unavailable.ts";

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("isDatabaseUnavailable", () => {
  it("recognises a refused connection, a connection cut off, and a server shutting down", async () => {
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${await closedPort()}/postgres` });
    const refused = await client.connect().catch((error: unknown) => error);
    expect(isDatabaseUnavailable(refused)).toBe(true);
    expect(isDatabaseUnavailable(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error("the database system is starting up"), { code: "57P03" }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error("connection failure"), { code: "08006" }))).toBe(true);
    expect(isDatabaseUnavailable(new Error("wrapped", { cause: refused }))).toBe(true);
  });

  it("does not mistake a statement's own failure for an outage", () => {
    expect(isDatabaseUnavailable(Object.assign(new Error("syntax error"), { code: "42601" }))).toBe(false);
    expect(isDatabaseUnavailable(Object.assign(new Error("duplicate key"), { code: "23505" }))).toBe(false);
    expect(isDatabaseUnavailable(new Error("boom"))).toBe(false);
    expect(isDatabaseUnavailable(null)).toBe(false);
    expect(isDatabaseUnavailable("Connection terminated")).toBe(false);
  });

  it("reads an AggregateError as an outage only when every part of it is one", () => {
    const cut = new Error("Connection terminated unexpectedly");
    expect(isDatabaseUnavailable(new AggregateError([cut, cut], "two"))).toBe(true);
    expect(isDatabaseUnavailable(new AggregateError([cut, new Error("boom")], "mixed"))).toBe(false);
  });
});

describe("retryWhileUnavailable", () => {
  it("tries again while the database is away and returns the first success", async () => {
    let tries = 0;
    const retried: unknown[] = [];
    const result = await retryWhileUnavailable(async () => {
      if (++tries < 3) throw new Error("Connection terminated unexpectedly");
      return "done";
    }, { onRetry: (error) => retried.push(error) });
    expect(result).toBe("done");
    expect(tries).toBe(3);
    expect(retried).toHaveLength(2);
  });

  it("throws any other error at once, and an outage once maxMs is spent", async () => {
    let tries = 0;
    await expect(retryWhileUnavailable(async () => {
      tries++;
      throw new Error("boom");
    })).rejects.toThrow("boom");
    expect(tries).toBe(1);
    await expect(retryWhileUnavailable(async () => {
      throw new Error("Connection terminated unexpectedly");
    }, { maxMs: 0 })).rejects.toThrow("Connection terminated");
  });
});
