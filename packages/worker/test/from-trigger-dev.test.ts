// The porting guide's example (docs/from-trigger-dev.md), executed: a Trigger.dev v4 task file
// (examples/from-trigger-dev/original/orders.ts) ported to svc (src/tasks/orders.ts: the import,
// and two side effects before the wait in step.run) runs on a real worker and API process
// against Postgres, calling a shop API this test serves. It is triggered through its handle, waits
// for a reviewer's approval (given through the token's callback URL), triggers a child and waits
// for it — and every side effect happened once, whatever the replays.
import { createServer, type Server } from "node:http";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runs, withAuth } from "@svc/runtime";
import { connectTestEngine, createTestDatabase, type TestDatabase } from "@svc/runtime/testing";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { fulfilOrder, sendReceipt } from "../../../examples/from-trigger-dev/src/tasks/orders.ts";
import { spawnApi, spawnWorker, type ServiceProcess } from "./processes.ts";

const CONFIG = fileURLToPath(new URL("../../../examples/from-trigger-dev/svc.config.ts", import.meta.url));

/** The shop API the tasks call: a payment that fails once with a 503, a review queue, an email sender. */
const seen = { charges: [] as { orderId: string; amount: number; reference: string }[], reviews: [] as { orderId: string; approveUrl: string }[], emails: [] as { to: string }[] };
let shop: Server;
let db: TestDatabase;
let api: ServiceProcess;
let worker: ServiceProcess;
let base: string;
let secretKey: string;

beforeAll(async () => {
  shop = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const json = JSON.parse(body || "{}");
      const reply = (status: number, value: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
      if (req.url === "/charges") {
        seen.charges.push(json);
        return seen.charges.length === 1 ? reply(503, { error: "try again" }) : reply(201, { chargeId: `ch_${seen.charges.length}` });
      }
      if (req.url === "/reviews") return (seen.reviews.push(json), reply(200, {}));
      if (req.url === "/emails") return (seen.emails.push(json), reply(200, { messageId: `msg_${seen.emails.length}` }));
      reply(404, { error: "not found" });
    });
  });
  await new Promise<void>((resolve) => shop.listen(0, "127.0.0.1", resolve));
  const shopUrl = `http://127.0.0.1:${(shop.address() as { port: number }).port}`;

  db = await createTestDatabase();
  const { project } = await connectTestEngine(db);
  secretKey = project.environments.dev.secretKey;
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  api = spawnApi(db.url, port, { SERVICE_API_URL: base });
  worker = spawnWorker(db.url, secretKey, CONFIG, { SERVICE_API_URL: base, SHOP_API_URL: shopUrl });
  await Promise.all([api.ready, worker.ready]);
}, 120_000);

afterAll(async () => {
  for (const p of [api, worker]) p?.child.kill("SIGKILL");
  await Promise.all([api?.exited, worker?.exited]);
  await new Promise((resolve) => shop?.close(resolve));
  await db?.drop();
});

async function until<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const found = await check();
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}\n${worker.output()}`);
}

const asClient = <T>(fn: () => Promise<T>) => withAuth({ baseURL: base, secretKey }, fn);

/** The worker's JSON log lines (pino). */
function logLines(): { level: number; msg: string; runId?: string; attempt?: number; task?: string; notice?: string; attributes?: Record<string, unknown> }[] {
  return worker
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line));
}

describe("a Trigger.dev v4 task file ported to svc", () => {
  it("refuses a payload its schema refuses before sending it", async () => {
    await expect(asClient(() => fulfilOrder.trigger({ orderId: "o-0", email: "not an email", amount: 1 }))).rejects.toThrow(/email/i);
  });

  it("runs: triggered by its handle, charged once through a 503, the reviewer asked once, approved, the receipt child awaited", async () => {
    const handle = await asClient(() => fulfilOrder.trigger({ orderId: "o-1", email: "ada@example.com", amount: 42 }));
    expect(handle.id).toMatch(/^run_/);

    const review = await until(async () => seen.reviews[0], "the reviewer to be asked");
    expect(review.orderId).toBe("o-1");
    await until(async () => ((await asClient(() => runs.retrieve(handle.id))).status === "WAITING" ? true : undefined), "the run to wait for its reviewer");
    // The reviewer approves through the token's callback URL (no credentials: the URL is signed).
    const approved = await fetch(review.approveUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ approved: true }) });
    expect(approved.status).toBe(200);

    const run = await until(async () => {
      const r = await asClient(() => runs.retrieve(handle.id));
      return r.status === "COMPLETED" || r.status === "FAILED" ? r : undefined;
    }, "the run to finish");
    expect(run.status).toBe("COMPLETED");
    // The side effects before the wait happened once, with the values the output reports.
    expect(seen.charges).toHaveLength(2);
    expect(seen.charges[1]).toEqual(seen.charges[0]);
    expect(seen.reviews).toHaveLength(1);
    expect(seen.emails).toEqual([{ to: "ada@example.com", subject: "Your receipt for order o-1" }]);
    expect(run.output).toEqual({ status: "fulfilled", chargeId: "ch_2", reference: seen.charges[0]!.reference, receivedAt: expect.any(String), messageId: "msg_1", attempt: 1 });
    expect(run.tags).toContain("order:o-1");

    // The task's log lines are in the worker's log with their run; onStart logged once, and the
    // line the replay logged again is not at info level.
    const lines = logLines().filter((l) => l.runId === handle.id);
    expect(lines.filter((l) => l.msg === "Fulfilling order").map((l) => [l.level, l.attempt, l.task])).toEqual([[30, 1, "fulfil-order"]]);
    expect(lines.filter((l) => l.msg === "Waiting for a reviewer" && l.level === 30)).toHaveLength(1);
    expect(lines.find((l) => l.msg === "Order done")?.attributes).toMatchObject({ orderId: "o-1", output: { status: "fulfilled" } });
    const child = logLines().find((l) => l.msg === "Receipt sent")!;
    expect(child).toMatchObject({ task: "send-receipt", attributes: { orderId: "o-1", messageId: "msg_1" } });
    // And svc said where its replay model differs, once.
    expect(logLines().filter((l) => l.notice === "replayed-logs")).toHaveLength(1);
  });

  it("batch-triggers through a task's handle", async () => {
    const batch = await asClient(() =>
      sendReceipt.batchTrigger([{ payload: { orderId: "o-2", email: "b@example.com", amount: 1 } }, { payload: { orderId: "o-3", email: "c@example.com", amount: 2 } }]),
    );
    expect(batch).toMatchObject({ batchId: expect.stringMatching(/^batch_/), runCount: 2, isCached: false });
    await until(async () => (seen.emails.length === 3 ? true : undefined), "both receipts to be sent");
    expect(seen.emails.slice(1).map((e) => e.to).sort()).toEqual(["b@example.com", "c@example.com"]);
  });
});
