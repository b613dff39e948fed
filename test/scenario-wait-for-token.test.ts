import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configure, wait as sdkWait } from "@trigger.dev/sdk";
import { triggerRun } from "../packages/runtime/src/engine/index.ts";
import { forToken, task } from "../packages/runtime/src/sdk/index.ts";
import { startTestWorker, type TestWorker } from "../packages/worker/test/harness.ts";
import { startTestApi, type TestApi } from "../packages/api/test/harness.ts";
import { createTokenOk } from "../packages/api/test/waitpoints-helpers.ts";

// End to end across packages (the API and a real worker together, so it lives here, in neither
// package): a real worker runs a task that waits in wait.forToken; the token is completed each
// way a user can (published SDK, /complete with the secret key, /complete with the token's public
// access token, a POST to its callback URL); the run resumes and finishes with the output.
let api: TestApi;
let tw: TestWorker;
let baseURL: string;

const approval = task({
  id: "approval",
  run: async (payload: { tokenId: string }) => {
    const result = await forToken<Record<string, unknown>>(payload.tokenId);
    return { after: "wait", output: result.unwrap() };
  },
});

beforeAll(async () => {
  api = await startTestApi();
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  baseURL = `http://127.0.0.1:${(api.app.server.address() as { port: number }).port}`;
  // Callback URLs must point at this server.
  api.engine.apiUrl = baseURL;
  tw = await startTestWorker(api, [approval]);
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey });
});
afterAll(async () => {
  await tw?.stop();
  await api?.close();
});

async function waitingRun() {
  const token = await createTokenOk(api, { timeout: "1h" });
  const { id } = await triggerRun(api.engine, api.env, "approval", { tokenId: token.id });
  await tw.worker.events.next("runSuspended", (e) => e.runId === id);
  const { rows } = await api.db.pool.query(`SELECT status FROM runs WHERE id = $1`, [id]);
  expect(rows[0].status).toBe("WAITING");
  return { token, runId: id, finished: tw.worker.events.next("runFinished", (e) => e.runId === id) };
}

async function outputOf(runId: string) {
  const res = await api.app.inject({ method: "GET", url: `/api/v3/runs/${runId}`, headers: api.devAuth });
  return res.json();
}

describe("trigger → wait.forToken → complete → COMPLETED with the output", () => {
  it("completes through the published SDK's wait.completeToken", async () => {
    const { token, runId, finished } = await waitingRun();
    await sdkWait.completeToken(token.id, { via: "sdk" });
    expect((await finished).status).toBe("COMPLETED");
    expect((await outputOf(runId)).output).toEqual({ after: "wait", output: { via: "sdk" } });
  });

  it("completes through POST /complete with the secret key and { output }", async () => {
    const { token, runId, finished } = await waitingRun();
    const res = await fetch(`${baseURL}/api/v1/waitpoints/tokens/${token.id}/complete`, {
      method: "POST",
      headers: { ...api.devAuth, "content-type": "application/json" },
      body: JSON.stringify({ output: { via: "secret key" } }),
    });
    expect(await res.json()).toEqual({ success: true });
    expect((await finished).status).toBe("COMPLETED");
    expect((await outputOf(runId)).output).toEqual({ after: "wait", output: { via: "secret key" } });
  });

  it("completes through POST /complete with the token's publicAccessToken", async () => {
    const { token, runId, finished } = await waitingRun();
    const res = await fetch(`${baseURL}/api/v1/waitpoints/tokens/${token.id}/complete`, {
      method: "POST",
      headers: { authorization: `Bearer ${token.publicAccessToken}`, "content-type": "application/json" },
      body: JSON.stringify({ data: { via: "public token" } }),
    });
    expect(res.status).toBe(200);
    expect((await finished).status).toBe("COMPLETED");
    expect((await outputOf(runId)).output).toEqual({ after: "wait", output: { via: "public token" } });
  });

  it("completes through a POST to the token's callback URL, with no auth header", async () => {
    const { token, runId, finished } = await waitingRun();
    const res = await fetch(token.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ via: "callback" }) });
    expect(res.status).toBe(200);
    expect((await finished).status).toBe("COMPLETED");
    expect((await outputOf(runId)).output).toEqual({ after: "wait", output: { via: "callback" } });
  });

  it("a second completion changes nothing for the finished run", async () => {
    const { token, runId, finished } = await waitingRun();
    await sdkWait.completeToken(token.id, { n: 1 });
    await finished;
    await sdkWait.completeToken(token.id, { n: 2 });
    expect((await outputOf(runId)).output).toEqual({ after: "wait", output: { n: 1 } });
  });
});
