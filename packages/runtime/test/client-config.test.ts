// Pure parts of the client: configuration layering, withAuth scoping, retry decisions, scopes.
import { describe, expect, it } from "vitest";
import { AmbientConfig, asyncLocalScopeStore, findAsyncLocalStorage, globalSwapScopeStore } from "../src/client/auth-scope.ts";
import { applyLayer, configFromEnvironment, DEFAULT_BASE_URL, resolveConfig } from "../src/client/config.ts";
import { backoffDelayMs } from "../src/backoff.ts";
import { decideRetry, DEFAULT_RETRY } from "../src/client/retry.ts";
import { expirationSeconds, flattenScopes } from "../src/client/public-tokens.ts";
import { auth } from "../src/client/global.ts";
import { currentExecution, runInExecution, type RunExecution } from "../src/sdk/run-context.ts";

const env = { SERVICE_SECRET_KEY: "svc_dev_env", SERVICE_API_URL: "http://env.example:1", SERVICE_PREVIEW_BRANCH: "from-env" };

function ambient(environment: Record<string, string | undefined> = {}, isolated = true) {
  const store = isolated ? asyncLocalScopeStore(findAsyncLocalStorage()!) : globalSwapScopeStore();
  return new AmbientConfig(store, () => environment);
}

/** Resolves after the other side has reached the same point: interleaves two async contexts. */
function barrier() {
  let arrivals = 0;
  let release!: () => void;
  const all = new Promise<void>((resolve) => (release = resolve));
  return async () => {
    arrivals += 1;
    if (arrivals === 2) release();
    await all;
  };
}

describe("configuration layers", () => {
  it("reads the environment variables, with http://localhost:3030 as the default base URL", () => {
    expect(configFromEnvironment(env)).toMatchObject({ accessToken: "svc_dev_env", baseURL: "http://env.example:1", previewBranch: "from-env" });
    expect(configFromEnvironment({})).toMatchObject({ accessToken: undefined, baseURL: DEFAULT_BASE_URL, previewBranch: undefined });
  });

  it("treats the three credential names as one field, the inner layer replacing the outer", () => {
    const base = configFromEnvironment(env);
    expect(applyLayer(base, { accessToken: "jwt" }).accessToken).toBe("jwt");
    expect(resolveConfig(base, [{ accessToken: "jwt" }, { secretKey: "svc_prod_x" }]).accessToken).toBe("svc_prod_x");
    expect(resolveConfig(base, [{ secretKey: "svc_prod_x" }, { personalAccessToken: "svc_pat_y" }]).accessToken).toBe("svc_pat_y");
  });

  it("inherits fields a layer leaves out and clears the branch when a layer sets it to undefined", () => {
    const resolved = resolveConfig(configFromEnvironment(env), [{ secretKey: "svc_prod_x" }, { previewBranch: "feat-1" }]);
    expect(resolved).toMatchObject({ accessToken: "svc_prod_x", previewBranch: "feat-1", baseURL: "http://env.example:1" });
    expect(resolveConfig(configFromEnvironment(env), [{ previewBranch: undefined }]).previewBranch).toBeUndefined();
  });

  it("merges request options layer by layer", () => {
    const resolved = resolveConfig(configFromEnvironment({}), [
      { requestOptions: { retry: { maxAttempts: 5 }, additionalHeaders: { a: "1" } } },
      { requestOptions: { retry: { minTimeoutInMs: 1 }, additionalHeaders: { b: "2" } } },
    ]);
    expect(resolved.requestOptions).toMatchObject({ retry: { maxAttempts: 5, minTimeoutInMs: 1 }, additionalHeaders: { a: "1", b: "2" } });
  });
});

describe("withAuth scoping", () => {
  it("reads process-like environment lazily, at each resolve", () => {
    const vars: Record<string, string | undefined> = {};
    const config = ambient(vars);
    expect(config.resolve().accessToken).toBeUndefined();
    vars.SERVICE_SECRET_KEY = "svc_dev_late";
    expect(config.resolve().accessToken).toBe("svc_dev_late");
  });

  it("keeps two overlapping async contexts apart", async () => {
    const config = ambient(env);
    const meet = barrier();
    const seen = await Promise.all(
      ["svc_dev_a", "svc_prod_b"].map((key) =>
        config.withAuth({ secretKey: key }, async () => {
          await meet(); // both scopes are open at this point
          return config.resolve().accessToken;
        }),
      ),
    );
    expect(seen).toEqual(["svc_dev_a", "svc_prod_b"]);
    expect(config.resolve().accessToken).toBe("svc_dev_env");
  });

  it("composes nested overrides and restores each level afterwards", async () => {
    const config = ambient(env);
    config.configure({ secretKey: "svc_dev_global" });
    const inner = await config.withAuth({ secretKey: "svc_prod_outer" }, async () => {
      const nested = await config.withAuth({ previewBranch: "feat-x" }, () => config.resolve());
      return { nested, after: config.resolve() };
    });
    expect(inner.nested).toMatchObject({ accessToken: "svc_prod_outer", previewBranch: "feat-x" });
    expect(inner.after).toMatchObject({ accessToken: "svc_prod_outer", previewBranch: "from-env" });
    expect(config.resolve().accessToken).toBe("svc_dev_global");
  });

  it("restores the previous configuration when fn throws", async () => {
    const config = ambient(env);
    await expect(config.withAuth({ secretKey: "svc_prod_x" }, async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(config.resolve().accessToken).toBe("svc_dev_env");
  });

  it("falls back to swapping the global configuration where AsyncLocalStorage is missing (not concurrency-safe)", async () => {
    const config = ambient(env, false);
    expect(config.scopes.isolated).toBe(false);
    let during: string | undefined;
    await config.withAuth({ secretKey: "svc_prod_x" }, async () => {
      during = config.resolve().accessToken;
    });
    expect(during).toBe("svc_prod_x");
    expect(config.resolve().accessToken).toBe("svc_dev_env");
    await expect(config.withAuth({ secretKey: "svc_prod_y" }, () => Promise.reject(new Error("x")))).rejects.toThrow();
    expect(config.resolve().accessToken).toBe("svc_dev_env");
  });

  it("leaves the task's run context alone: calls inside withAuth still see their run", async () => {
    const execution = { ctx: { run: { id: "run_ctx" } } } as unknown as RunExecution;
    const seen = await runInExecution(execution, () =>
      auth.withAuth({ secretKey: "svc_prod_x" }, () => auth.withAuth({ previewBranch: "b" }, async () => currentExecution())),
    );
    expect(seen).toBe(execution);
  });

  it("configure() replaces the global configuration; unset fields fall back to the environment", () => {
    const config = ambient(env);
    config.configure({ secretKey: "svc_dev_1", previewBranch: "b" });
    config.configure({ baseURL: "http://other:9" });
    expect(config.resolve()).toMatchObject({ accessToken: "svc_dev_env", baseURL: "http://other:9", previewBranch: "from-env" });
  });
});

describe("retry decisions", () => {
  const response = (status: number, headers: Record<string, string> = {}) => ({ kind: "response" as const, status, headers: new Headers(headers) });
  const noJitter = { randomize: false };

  it("retries 408, 429, 5xx and connection errors, not other 4xx", () => {
    for (const status of [408, 429, 500, 502, 503]) expect(decideRetry(1, response(status), noJitter).retry).toBe(true);
    for (const status of [400, 401, 403, 404, 409, 422]) expect(decideRetry(1, response(status), noJitter).retry).toBe(false);
    expect(decideRetry(1, { kind: "connectionError" }, noJitter)).toEqual({ retry: true, delayMs: 1000 });
  });

  it("stops after maxAttempts (3 by default)", () => {
    expect(DEFAULT_RETRY.maxAttempts).toBe(3);
    expect(decideRetry(2, response(500), noJitter).retry).toBe(true);
    expect(decideRetry(3, response(500), noJitter).retry).toBe(false);
    expect(decideRetry(1, response(500), { maxAttempts: 1 }).retry).toBe(false);
  });

  it("lets x-should-retry override the status rule both ways", () => {
    expect(decideRetry(1, response(500, { "x-should-retry": "false" })).retry).toBe(false);
    expect(decideRetry(1, response(409, { "x-should-retry": "true" }), noJitter)).toEqual({ retry: true, delayMs: 1000 });
  });

  it("backs off exponentially, capped, with jitter between 1x and 2x", () => {
    const policy = { ...DEFAULT_RETRY, randomize: false };
    expect([1, 2, 3].map((a) => backoffDelayMs(a, policy, 0))).toEqual([1000, 2000, 4000]);
    expect(backoffDelayMs(10, policy, 0)).toBe(30_000);
    expect(backoffDelayMs(1, DEFAULT_RETRY, 0, () => 0.5)).toBe(1500);
    // A request retry waits at most 30 s by default (a task retry: 60 s).
    expect(decideRetry(10, { kind: "connectionError" }, { maxAttempts: 20, randomize: false })).toEqual({ retry: true, delayMs: 30_000 });
    // ∞ × 0 is NaN: the default cap instead of an immediate retry.
    expect(decideRetry(2, { kind: "connectionError" }, { minTimeoutInMs: Number.POSITIVE_INFINITY, factor: 0, maxTimeoutInMs: Number.POSITIVE_INFINITY })).toEqual({ retry: true, delayMs: 30_000 });
  });

  it("waits for retry-after or x-ratelimit-reset on a 429", () => {
    expect(decideRetry(1, response(429, { "retry-after": "2" }))).toEqual({ retry: true, delayMs: 2000 });
    expect(decideRetry(1, response(429, { "x-ratelimit-reset": "10500" }), {}, 10_000)).toEqual({ retry: true, delayMs: 500 });
  });
});

describe("public token scopes", () => {
  it("flattens ids, id arrays and `true` into action:type[:id]", () => {
    expect(
      flattenScopes({
        read: { runs: ["run_1", "run_2"], tags: "t", sessions: "session_1", tasks: true },
        write: { waitpoints: "waitpoint_1", sessions: ["ext-1"] },
        trigger: { tasks: "hello" },
        batchTrigger: { tasks: ["a"] },
      }),
    ).toEqual([
      "read:runs:run_1",
      "read:runs:run_2",
      "read:tags:t",
      "read:sessions:session_1",
      "read:tasks",
      "write:waitpoints:waitpoint_1",
      "write:sessions:ext-1",
      "trigger:tasks:hello",
      "batchTrigger:tasks:a",
    ]);
    expect(flattenScopes({})).toEqual([]);
    expect(() => flattenScopes({ read: { runs: [""] } })).toThrow(/non-empty/);
  });

  it("turns durations, seconds and dates into an exp claim", () => {
    const now = 1_700_000_000_000;
    expect(expirationSeconds("1h", now)).toBe(1_700_000_000 + 3600);
    expect(expirationSeconds(60, now)).toBe(1_700_000_000 + 60);
    expect(expirationSeconds(new Date(now + 5000), now)).toBe(1_700_000_005);
    expect(() => expirationSeconds("soon", now)).toThrow(/duration/);
  });
});
