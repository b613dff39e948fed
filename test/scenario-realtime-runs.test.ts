import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, configure, runs, tasks } from "@trigger.dev/sdk";
import { task } from "../packages/runtime/src/sdk/index.ts";
import { startTestWorker, type TestWorker } from "../packages/worker/test/harness.ts";
import { startListeningApi, type ListeningApi } from "../packages/api/test/client-server.ts";

// End to end across packages: the published SDK subscribes to a run (with the trigger's public
// token) that a real worker takes to EXECUTING → COMPLETED; the task waits in EXECUTING until the
// subscriber has seen it, so every state is observed, and the last row has the output. Triggered
// before any worker has the task, the run reads PENDING_VERSION (as on Trigger.dev: no version with
// the task yet) until the worker that starts with it claims it.
let api: ListeningApi;
let tw: TestWorker | undefined;
let release!: () => void;
const seenExecuting = new Promise<void>((resolve) => (release = resolve));

const doubler = task({
  id: "realtime-doubler",
  run: async (payload: { n: number }) => {
    await seenExecuting;
    return { doubled: payload.n * 2 };
  },
});

beforeAll(async () => {
  api = await startListeningApi();
  configure({ baseURL: api.baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
});
afterAll(async () => {
  release();
  await tw?.stop();
  await api?.close();
});

describe("runs.subscribeToRun with a worker running the run", () => {
  it("sees PENDING_VERSION, then EXECUTING, then COMPLETED with the output, and ends by itself", async () => {
    const handle = await tasks.trigger("realtime-doubler", { n: 21 }, { tags: ["e2e"] });
    const statuses: string[] = [];
    let last: { output?: unknown; isSuccess: boolean; finishedAt?: Date; startedAt?: Date } | undefined;
    await auth.withAuth({ accessToken: handle.publicAccessToken }, async () => {
      for await (const run of runs.subscribeToRun(handle.id)) {
        if (statuses.at(-1) !== run.status) statuses.push(run.status);
        last = run;
        // The worker starts once the subscriber saw the run waiting for it, and the task ends once it saw it executing.
        if (run.status === "PENDING_VERSION" && !tw) tw = await startTestWorker(api, [doubler]);
        if (run.status === "EXECUTING") release();
      }
    });
    // DEQUEUED (claimed, not yet running) may be seen between the two, depending on timing.
    expect(statuses.filter((s) => s !== "DEQUEUED")).toEqual(["PENDING_VERSION", "EXECUTING", "COMPLETED"]);
    expect(last).toMatchObject({ output: { doubled: 42 }, isSuccess: true });
    expect(last!.startedAt).toBeInstanceOf(Date);
    expect(last!.finishedAt).toBeInstanceOf(Date);
  });
});
