// Who the client speaks as: configure(), environment variables, explicit instances, withAuth scopes,
// preview branches and public tokens, checked against what the real server recorded.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createBranch } from "@svc/runtime/engine";
import { ApiClient, AuthenticationError, auth, configure, runs, tasksClient, UnprocessableEntityError } from "@svc/runtime";
import { clearServiceEnvironment, environmentOfRun, NO_RETRY, startListeningApi, type ListeningApi } from "./client-server.ts";

let api: ListeningApi;
let keys: { dev: string; prod: string; preview: string };
let envIds: { dev: string; prod: string; preview: string };

beforeAll(async () => {
  api = await startListeningApi();
  const e = api.project.environments;
  keys = { dev: e.dev.secretKey, prod: e.prod.secretKey, preview: e.preview.secretKey };
  envIds = { dev: e.dev.id, prod: e.prod.id, preview: e.preview.id };
});
afterAll(async () => {
  clearServiceEnvironment();
  await api?.close();
});
beforeEach(() => {
  clearServiceEnvironment();
  configure({ baseURL: api.baseURL, secretKey: keys.dev, requestOptions: NO_RETRY });
});

/** Resolves once both callers have arrived: keeps two async contexts open at the same time. */
function barrier() {
  let arrivals = 0;
  let release!: () => void;
  const all = new Promise<void>((resolve) => (release = resolve));
  return async () => {
    if (++arrivals === 2) release();
    await all;
  };
}

describe("configure and environment variables", () => {
  it("triggers in the environment of the configured secret key", async () => {
    const handle = await tasksClient.trigger("hello-world", { name: "Ada" });
    expect(handle.id).toMatch(/^run_/);
    expect(await environmentOfRun(api, handle.id)).toBe(envIds.dev);
  });

  it("reads SERVICE_SECRET_KEY and SERVICE_API_URL at call time when configure() leaves them out", async () => {
    configure({ requestOptions: NO_RETRY });
    process.env.SERVICE_API_URL = api.baseURL;
    process.env.SERVICE_SECRET_KEY = keys.prod;
    const handle = await tasksClient.trigger("hello-world", {});
    expect(await environmentOfRun(api, handle.id)).toBe(envIds.prod);
  });

  it("says clearly when no credential is configured", async () => {
    configure({ baseURL: api.baseURL });
    await expect(tasksClient.trigger("hello-world", {})).rejects.toThrow(/no credential configured/);
  });
});

describe("explicit ApiClient instances", () => {
  it("each use their own key, unaffected by configure() and by each other", async () => {
    const prod = new ApiClient({ baseURL: api.baseURL, secretKey: keys.prod, requestOptions: NO_RETRY });
    const dev = new ApiClient({ baseURL: api.baseURL, secretKey: keys.dev, requestOptions: NO_RETRY });
    configure({ baseURL: "http://127.0.0.1:9", secretKey: "svc_dev_wrong" });
    const [a, b] = await Promise.all([prod.tasks.trigger("t", 1), dev.tasks.trigger("t", 2)]);
    expect(await environmentOfRun(api, a.id)).toBe(envIds.prod);
    expect(await environmentOfRun(api, b.id)).toBe(envIds.dev);
  });

  it("ignore an enclosing withAuth scope", async () => {
    const prod = new ApiClient({ baseURL: api.baseURL, secretKey: keys.prod });
    const id = await auth.withAuth({ secretKey: keys.dev }, async () => (await prod.tasks.trigger("t", 1)).id);
    expect(await environmentOfRun(api, id)).toBe(envIds.prod);
  });
});

describe("auth.withAuth", () => {
  it("keeps two overlapping async contexts with different keys apart", async () => {
    const meet = barrier();
    const inScope = async (key: string) =>
      auth.withAuth({ secretKey: key }, async () => {
        await meet(); // both scopes are open now
        const first = await tasksClient.trigger("overlap", {});
        await new Promise((resolve) => setImmediate(resolve));
        const second = await tasksClient.trigger("overlap", {});
        return [first.id, second.id];
      });
    const [devRuns, prodRuns] = await Promise.all([inScope(keys.dev), inScope(keys.prod)]);
    for (const id of devRuns!) expect(await environmentOfRun(api, id)).toBe(envIds.dev);
    for (const id of prodRuns!) expect(await environmentOfRun(api, id)).toBe(envIds.prod);
  });

  it("composes nested scopes: an inner previewBranch inside an outer secretKey uses both", async () => {
    const branch = await createBranch(api.db.pool, api.project.projectRef, "feat-nested");
    const ids = await auth.withAuth({ secretKey: keys.preview }, async () => {
      const inner = await auth.withAuth({ previewBranch: "feat-nested" }, async () => (await tasksClient.trigger("t", {})).id);
      const outer = (await tasksClient.trigger("t", {})).id;
      return { inner, outer };
    });
    expect(await environmentOfRun(api, ids.inner)).toBe(branch.environment.id);
    expect(await environmentOfRun(api, ids.outer)).toBe(envIds.preview);
  });

  it("restores the previous configuration after fn throws", async () => {
    await expect(
      auth.withAuth({ secretKey: keys.prod }, async () => {
        await tasksClient.trigger("t", {});
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    const after = await tasksClient.trigger("t", {});
    expect(await environmentOfRun(api, after.id)).toBe(envIds.dev);
  });

  it("uses the scope in effect when a list was started for its later pages", async () => {
    const prod = new ApiClient({ baseURL: api.baseURL, secretKey: keys.prod });
    for (let i = 0; i < 3; i++) await prod.tasks.trigger("paged-in-scope", i);
    const page = await auth.withAuth({ secretKey: keys.prod }, () => runs.list({ taskIdentifier: "paged-in-scope", limit: 1 }));
    const all = [];
    for await (const run of page) all.push(run.id); // pages 2 and 3 are fetched after the scope closed
    expect(all).toHaveLength(3);
  });
});

describe("preview branches", () => {
  it("targets the branch named by configure({ previewBranch }) and by SERVICE_PREVIEW_BRANCH", async () => {
    const branch = await createBranch(api.db.pool, api.project.projectRef, "feat-configured");
    configure({ baseURL: api.baseURL, secretKey: keys.preview, previewBranch: "feat-configured" });
    expect(await environmentOfRun(api, (await tasksClient.trigger("t", {})).id)).toBe(branch.environment.id);
    configure({ baseURL: api.baseURL, secretKey: keys.preview });
    process.env.SERVICE_PREVIEW_BRANCH = "feat-configured";
    expect(await environmentOfRun(api, (await tasksClient.trigger("t", {})).id)).toBe(branch.environment.id);
  });

  it("sends x-service-branch (the svc header wins over x-trigger-branch on the server)", async () => {
    const branch = await createBranch(api.db.pool, api.project.projectRef, "feat-header");
    const client = new ApiClient({
      baseURL: api.baseURL,
      secretKey: keys.preview,
      previewBranch: "feat-header",
      requestOptions: { additionalHeaders: { "x-trigger-branch": "does-not-exist" } },
    });
    const { id } = await client.tasks.trigger("t", {});
    expect(await environmentOfRun(api, id)).toBe(branch.environment.id);
  });

  it("is ignored on dev, staging and prod keys", async () => {
    const client = new ApiClient({ baseURL: api.baseURL, secretKey: keys.prod, previewBranch: "anything" });
    expect(await environmentOfRun(api, (await client.tasks.trigger("t", {})).id)).toBe(envIds.prod);
  });
});

describe("public tokens", () => {
  it("createPublicToken mints a token the server accepts for the runs it names, and only those", async () => {
    const mine = await tasksClient.trigger("t", { secret: 1 });
    const other = await tasksClient.trigger("t", { secret: 2 });
    const token = await auth.createPublicToken({ scopes: { read: { runs: [mine.id] } } });
    const [, payload] = token.split(".");
    const claims = JSON.parse(Buffer.from(payload!, "base64url").toString("utf8"));
    expect(claims).toMatchObject({ sub: envIds.dev, pub: true, scopes: [`read:runs:${mine.id}`], iss: "https://id.trigger.dev", aud: "https://api.trigger.dev" });
    expect(claims.exp - claims.iat).toBe(3600);
    const asToken = new ApiClient({ baseURL: api.baseURL, accessToken: token, requestOptions: NO_RETRY });
    expect((await asToken.runs.retrieve(mine.id)).id).toBe(mine.id);
    await expect(asToken.runs.retrieve(other.id)).rejects.toMatchObject({ status: 403 });
  });

  it("withAuth({ accessToken }) uses a public token for the calls inside", async () => {
    const run = await tasksClient.trigger("t", {});
    const token = await auth.createPublicToken({ scopes: { read: { runs: true } }, expirationTime: "15m" });
    const seen = await auth.withAuth({ accessToken: token }, () => runs.retrieve(run.id));
    expect(seen.id).toBe(run.id);
  });

  it("the trigger response's publicAccessToken reads that run", async () => {
    const run = await tasksClient.trigger("t", {});
    expect(run.publicAccessToken).toBeTypeOf("string");
    const asToken = new ApiClient({ baseURL: api.baseURL, accessToken: run.publicAccessToken! });
    expect((await asToken.runs.retrieve(run.id)).id).toBe(run.id);
  });

  it("createTriggerPublicToken mints a one-time trigger:tasks:<id> token: it triggers its task once", async () => {
    const token = await auth.createTriggerPublicToken("allowed-task");
    const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"));
    expect(claims).toMatchObject({ scopes: ["trigger:tasks:allowed-task"], otu: true });
    const asToken = new ApiClient({ baseURL: api.baseURL, accessToken: token, requestOptions: NO_RETRY });
    expect((await asToken.tasks.trigger("allowed-task", {})).id).toMatch(/^run_/);
    const again = asToken.tasks.trigger("allowed-task", {});
    await expect(again).rejects.toBeInstanceOf(UnprocessableEntityError);
    await expect(again).rejects.toThrow(/one-time use token as it has already been used/);
  });

  it("createTriggerPublicToken with multipleUse mints a token without otu that triggers again", async () => {
    const token = await auth.createTriggerPublicToken("allowed-task", { multipleUse: true, expirationTime: "10m" });
    const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"));
    expect(claims.otu).toBeUndefined();
    const asToken = new ApiClient({ baseURL: api.baseURL, accessToken: token, requestOptions: NO_RETRY });
    await asToken.tasks.trigger("allowed-task", {});
    expect((await asToken.tasks.trigger("allowed-task", {})).id).toMatch(/^run_/);
  });

  it("an unknown key is an AuthenticationError", async () => {
    const bad = new ApiClient({ baseURL: api.baseURL, secretKey: "svc_dev_unknown", requestOptions: NO_RETRY });
    await expect(bad.tasks.trigger("t", {})).rejects.toBeInstanceOf(AuthenticationError);
    await expect(bad.createPublicToken()).rejects.toBeInstanceOf(AuthenticationError);
  });
});
