// SVC_DEBUG_ERRORS is read once, by the API's configuration; the error handler only obeys the
// option it was given (it used to read process.env on every unhandled error).
import Fastify from "fastify";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LogThrottle, systemClock } from "@svc/runtime/engine";
import { createErrorHandler } from "../src/http/errors.ts";
import { parseApiConfig } from "../src/config.ts";

async function answerOfFailingRoute(printUnhandled: boolean): Promise<{ status: number; body: unknown; printed: unknown[][] }> {
  const printed: unknown[][] = [];
  const spy = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void printed.push(args));
  const app = Fastify();
  app.setErrorHandler(createErrorHandler(new LogThrottle(systemClock), { printUnhandled }));
  app.get("/boom", async () => {
    throw new Error("internal detail");
  });
  try {
    const res = await app.inject({ method: "GET", url: "/boom" });
    return { status: res.statusCode, body: res.json(), printed };
  } finally {
    spy.mockRestore();
    await app.close();
  }
}

describe("printing unhandled errors", () => {
  const saved = process.env.SVC_DEBUG_ERRORS;
  afterEach(() => {
    if (saved === undefined) delete process.env.SVC_DEBUG_ERRORS;
    else process.env.SVC_DEBUG_ERRORS = saved;
  });

  it("prints only when the app was configured to, whatever process.env says later", async () => {
    process.env.SVC_DEBUG_ERRORS = "1";
    const quiet = await answerOfFailingRoute(false);
    expect(quiet.status).toBe(500);
    expect(quiet.body).toEqual({ error: "Internal Server Error" });
    expect(quiet.printed).toEqual([]);

    delete process.env.SVC_DEBUG_ERRORS;
    const loud = await answerOfFailingRoute(true);
    expect(loud.status).toBe(500);
    expect(loud.body).toEqual({ error: "Internal Server Error" });
    expect(loud.printed).toHaveLength(1);
    expect((loud.printed[0]![0] as Error).message).toBe("internal detail");
  });

  it("is a configuration setting: off unless set to something other than false/0", () => {
    const base = { DATABASE_URL: "postgres://x@localhost/db", SVC_ENCRYPTION_KEY: "0123456789abcdef" };
    expect(parseApiConfig(base).SVC_DEBUG_ERRORS).toBe(false);
    expect(parseApiConfig({ ...base, SVC_DEBUG_ERRORS: "0" }).SVC_DEBUG_ERRORS).toBe(false);
    expect(parseApiConfig({ ...base, SVC_DEBUG_ERRORS: "false" }).SVC_DEBUG_ERRORS).toBe(false);
    expect(parseApiConfig({ ...base, SVC_DEBUG_ERRORS: "1" }).SVC_DEBUG_ERRORS).toBe(true);
  });
});
