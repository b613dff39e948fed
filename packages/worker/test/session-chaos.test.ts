import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { envelope, sseRecords } from "../../api/test/sse-reader.ts";
import { startOwnCluster, type OwnCluster } from "./own-cluster.ts";
import { spawnApi, type ServiceProcess } from "./processes.ts";

// A chat with real processes: two API processes and two workers on a Postgres of the test's own.
// The browser side holds only the session's public token: it appends to .in through one API
// process and reads .out over SSE from the other. Every worker is killed with -9 while the run
// waits on .in; a message sent then is answered once a worker is back, and none is lost or doubled.
let cluster: OwnCluster;
let secondApi: ServiceProcess;
let secondBase: string;

beforeAll(async () => {
  cluster = await startOwnCluster({ workers: 2 });
  const port = await freePort();
  secondBase = `http://127.0.0.1:${port}`;
  secondApi = spawnApi(cluster.pg.url, port, { SERVICE_API_URL: secondBase });
  await secondApi.ready;
}, 120_000);
afterAll(async () => {
  secondApi?.child.kill("SIGKILL");
  await secondApi?.exited;
  await cluster?.close();
});

async function runStatus(runId: string): Promise<string> {
  const res = await fetch(`${cluster.base}/api/v3/runs/${runId}`, { headers: { authorization: `Bearer ${cluster.secretKey}` } });
  return ((await res.json()) as { status: string }).status;
}

/** Polls the run's status over the API until it is `status` (the run's state lives in another process). */
async function until(runId: string, status: string) {
  for (let i = 0; i < 600; i++) {
    if ((await runStatus(runId)) === status) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`run ${runId} never reached ${status}`);
}

describe("a chat across processes", () => {
  it("answers every message exactly once, also one sent while every worker was killed with -9", async () => {
    const created = await fetch(`${cluster.base}/api/v1/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${cluster.secretKey}`, "content-type": "application/json" },
      body: JSON.stringify({ type: "chat", externalId: "chaos-chat", taskIdentifier: "session-echo", triggerConfig: { basePayload: {} } }),
    });
    expect(created.status).toBe(201);
    const session = (await created.json()) as { id: string; runId: string; publicAccessToken: string };
    const browser = { authorization: `Bearer ${session.publicAccessToken}` };
    const res = await fetch(`${secondBase}/realtime/v1/sessions/chaos-chat/out`, { headers: { ...browser, "timeout-seconds": "600" } });
    expect(res.status).toBe(200);
    const stream = sseRecords(res);
    const send = async (text: string) => {
      const appended = await fetch(`${cluster.base}/realtime/v1/sessions/chaos-chat/in/append`, {
        method: "POST",
        headers: { ...browser, "content-type": "application/json" },
        body: JSON.stringify({ text }),
      });
      expect(appended.status).toBe(200);
    };
    const answer = async () => {
      const [reply, control] = await stream.next(2);
      expect(control).toMatchObject({ body: "", headers: [["trigger-control", "turn-complete"]] });
      return (envelope(reply!).data as { text: string }).text;
    };

    await until(session.runId, "WAITING");
    await send("one");
    expect(await answer()).toBe("echo: one");
    await until(session.runId, "WAITING");

    for (const worker of cluster.workers) worker.child.kill("SIGKILL");
    await Promise.all(cluster.workers.map((w) => w.exited));
    await send("two"); // no worker alive: stored, and the run's resume is due
    await cluster.addWorker();
    expect(await answer()).toBe("echo: two");
    await until(session.runId, "WAITING");
    await send("three");
    expect(await answer()).toBe("echo: three");
    expect(stream.pending).toBe(0);
    await stream.cancel();

    const drained = (await (await fetch(`${secondBase}/realtime/v1/sessions/chaos-chat/out/records`, { headers: browser })).json()) as {
      records: { data: unknown; seqNum: number; headers?: unknown }[];
    };
    expect(drained.records.map((r) => r.seqNum)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(drained.records.filter((r) => !r.headers).map((r) => (r.data as { text: string }).text)).toEqual(["echo: one", "echo: two", "echo: three"]);
  }, 120_000);
});
