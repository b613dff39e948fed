import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, configure, runs, tasks } from "@trigger.dev/sdk";
import { registerTasks } from "./registered-tasks.ts";
import { startListeningApi, type ListeningApi } from "./client-server.ts";

// The published SDK's realtime subscriptions, unchanged, against svc on a real port, with the
// public tokens the SDK makes. No worker runs here: runs change by cancel and by SQL (the
// scenario with a worker taking a run QUEUED → EXECUTING → COMPLETED is test/scenario-realtime-runs).
let api: ListeningApi;
beforeAll(async () => {
  api = await startListeningApi({ limits: { realtimeLivePollMs: 5000 } });
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
  // Registered, as a worker would: its queued runs read QUEUED (a never-registered task's read PENDING_VERSION).
  await registerTasks(api.db.pool, api.project.environments.dev.id, ["sdk-rt-task"]);
});
afterAll(async () => api?.close());

/** Waits until `n` live requests wait for changes (so a change made now is one they are woken for). */
async function waiting(n: number) {
  await expect.poll(() => api.deps.runChanges!.size, { timeout: 5000, interval: 10 }).toBeGreaterThanOrEqual(n);
}

describe("runs.subscribeToRun / subscribeToRunsWithTag / subscribeToBatch", () => {
  it("follows a run with the trigger's public token until it finishes, then ends by itself", async () => {
    const handle = await tasks.trigger("sdk-rt-task", { n: 21 }, { tags: ["sdk-rt"], metadata: { step: 0 } });
    const seen: { status: string; metadata: unknown; tags: string[]; finished: boolean }[] = [];
    await auth.withAuth({ accessToken: handle.publicAccessToken }, async () => {
      for await (const run of runs.subscribeToRun(handle.id)) {
        seen.push({ status: run.status, metadata: run.metadata, tags: run.tags, finished: run.finishedAt !== undefined });
        expect(run.id).toBe(handle.id);
        expect(run.taskIdentifier).toBe("sdk-rt-task");
        expect(run.payload).toEqual({ n: 21 });
        expect(run.createdAt).toBeInstanceOf(Date);
        if (seen.length === 1) {
          await waiting(1);
          await api.db.pool.query(`UPDATE runs SET metadata = '{"step":1}' WHERE id = $1`, [handle.id]);
        } else if (seen.length === 2) {
          await waiting(1);
          await auth.withAuth({ accessToken: api.project.environments.dev.secretKey }, () => runs.cancel(handle.id));
        }
      }
    });
    expect(seen).toEqual([
      { status: "QUEUED", metadata: { step: 0 }, tags: ["sdk-rt"], finished: false },
      { status: "QUEUED", metadata: { step: 1 }, tags: ["sdk-rt"], finished: false },
      { status: "CANCELED", metadata: { step: 1 }, tags: ["sdk-rt"], finished: true },
    ]);
  });

  it("shows a run of a task no worker ever registered as PENDING_VERSION", async () => {
    const handle = await tasks.trigger("sdk-rt-undeployed", { n: 1 });
    const seen: string[] = [];
    await auth.withAuth({ accessToken: handle.publicAccessToken }, async () => {
      for await (const run of runs.subscribeToRun(handle.id)) {
        seen.push(run.status);
        expect(run.isQueued).toBe(run.status === "PENDING_VERSION");
        if (seen.length === 1) {
          await waiting(1);
          await auth.withAuth({ accessToken: api.project.environments.dev.secretKey }, () => runs.cancel(handle.id));
        }
      }
    });
    expect(seen).toEqual(["PENDING_VERSION", "CANCELED"]);
  });

  it("sees new runs with a tag, with a token from auth.createPublicToken scoped to the tag", async () => {
    const first = await tasks.trigger("sdk-rt-task", { n: 1 }, { tags: ["sdk-user:7"] });
    await tasks.trigger("sdk-rt-task", { n: 2 }, { tags: ["sdk-user:8"] });
    const token = await auth.createPublicToken({ scopes: { read: { tags: ["sdk-user:7"] } } });
    const ids: string[] = [];
    let second: string | undefined;
    await auth.withAuth({ accessToken: token }, async () => {
      for await (const run of runs.subscribeToRunsWithTag("sdk-user:7", { createdAt: "1h" })) {
        ids.push(run.id);
        if (ids.length === 1) {
          await waiting(1);
          second = (await auth.withAuth({ accessToken: api.project.environments.dev.secretKey }, () => tasks.trigger("sdk-rt-task", { n: 3 }, { tags: ["sdk-user:7"] }))).id;
        } else break;
      }
    });
    expect(ids).toEqual([first.id, second]);
  });

  it("follows a batch's runs with the batch's token", async () => {
    const batch = await tasks.batchTrigger("sdk-rt-task", [{ payload: { i: 0 } }, { payload: { i: 1 } }]);
    const latest = new Map<string, string>();
    await auth.withAuth({ accessToken: batch.publicAccessToken }, async () => {
      for await (const run of runs.subscribeToBatch(batch.batchId)) {
        latest.set(run.id, run.status);
        if (latest.size === 2 && [...latest.values()].every((s) => s === "QUEUED")) {
          await waiting(1);
          await auth.withAuth({ accessToken: api.project.environments.dev.secretKey }, async () => {
            for (const id of latest.keys()) await runs.cancel(id);
          });
        }
        if ([...latest.values()].every((s) => s === "CANCELED") && latest.size === 2) break;
      }
    });
    expect([...latest.values()]).toEqual(["CANCELED", "CANCELED"]);
  });

});
