import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forToken, task } from "../packages/runtime/src/sdk/index.ts";
import { ApiClient } from "../packages/runtime/src/index.ts";
import { startTestWorker, type TestWorker } from "../packages/worker/test/harness.ts";
import { startTestApi, type TestApi } from "../packages/api/test/harness.ts";
import { createTokenOk } from "../packages/api/test/waitpoints-helpers.ts";

// runs.poll of the @svc/runtime client against the API and a real worker: it returns the run once
// it has finished, keeps polling through WAITING, and gives up when its signal aborts.
let api: TestApi;
let tw: TestWorker;
let client: ApiClient;

const echo = task({ id: "echo", run: async (payload: { n: number }) => ({ n: payload.n }) });
const approval = task({ id: "approval", run: async (payload: { tokenId: string }) => (await forToken<{ ok: boolean }>(payload.tokenId)).unwrap() });

beforeAll(async () => {
  api = await startTestApi();
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  const baseURL = `http://127.0.0.1:${(api.app.server.address() as { port: number }).port}`;
  tw = await startTestWorker(api, [echo, approval]);
  tw.worker.events.on("runSuspended", (e) => suspended.add(e.runId));
  client = new ApiClient({ baseURL, secretKey: api.project.environments.dev.secretKey });
});
/** Runs suspended so far: a run may suspend before the test learns its id. */
const suspended = new Set<string>();
async function suspension(runId: string): Promise<void> {
  if (!suspended.has(runId)) await tw.worker.events.next("runSuspended", (e) => e.runId === runId);
}

afterAll(async () => {
  await tw?.stop();
  await api?.close();
});

describe("runs.poll", () => {
  it("returns the finished run, with its output, right after the trigger", async () => {
    const handle = await client.tasks.trigger("echo", { n: 7 });
    const run = await client.runs.poll(handle, { pollIntervalMs: 20 });
    expect(run.status).toBe("COMPLETED");
    expect(run.output).toEqual({ n: 7 });
  });

  it("polls through WAITING until the token is completed", async () => {
    const token = await createTokenOk(api, {});
    const handle = await client.tasks.trigger("approval", { tokenId: token.id });
    const polled = client.runs.poll(handle.id, { pollIntervalMs: 20 });
    await suspension(handle.id);
    expect((await client.runs.retrieve(handle.id)).status).toBe("WAITING");
    await client.waitpoints.completeToken(token.id, { ok: true });
    const run = await polled;
    expect(run.status).toBe("COMPLETED");
    expect(run.output).toEqual({ ok: true });
  });

  it("stops when its signal aborts, and refuses what is not a run", async () => {
    const token = await createTokenOk(api, {});
    const handle = await client.tasks.trigger("approval", { tokenId: token.id });
    const controller = new AbortController();
    const polled = client.runs.poll(handle, { pollIntervalMs: 20, signal: controller.signal });
    await suspension(handle.id);
    controller.abort(new Error("gave up"));
    await expect(polled).rejects.toThrow("gave up");
    await expect(client.runs.poll({} as { id: string })).rejects.toThrow(TypeError);
    await expect(client.runs.poll("run_x", { pollIntervalMs: -1 })).rejects.toThrow(/pollIntervalMs/);
  });
});
