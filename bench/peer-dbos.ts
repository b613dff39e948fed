import { DBOS } from "@dbos-inc/dbos-sdk";
import { Marks, type PeerSide } from "./peer-side.ts";

const ready = new Marks();
const resumed = new Marks();

// DBOS keeps its registry in the process (one DBOS per process): registered once, on import.
const noop = DBOS.registerWorkflow(async () => 1, { name: "peer-noop" });
const waiter = DBOS.registerWorkflow(
  async (key: string) => {
    ready.reached(key);
    // One hour, as svc's bench tokens: a recv with a timeout records its deadline durably.
    await DBOS.recv<string>("tok", 3600);
    resumed.reached(key);
    return 1;
  },
  { name: "peer-wait" },
);

/** A waiting workflow: `ready` marks it just before it calls recv; the recv's own queries need far less than this. */
const SETTLE_MS = 100;

/**
 * DBOS Transact 5.3 with its defaults for a Postgres system database (this side's fresh
 * database; pool of 10, LISTEN/NOTIFY on, `logLevel` warn only to keep the report clean).
 * Workflows are started in this process with `DBOS.startWorkflow`, as DBOS runs them: the process
 * that starts a workflow executes it (no queue: DBOS queues are polled, every 1 s by default,
 * and would measure the poll). A unit of work is a workflow that returns 1; a wait is
 * `DBOS.recv(topic, 3600)`, ended by `DBOS.send` from outside the workflow.
 */
export async function dbosSide(url: string): Promise<PeerSide<{ key: string; workflowID: string; result: () => Promise<unknown> }>> {
  DBOS.setConfig({ name: "svc-bench-peers", systemDatabaseUrl: url, logLevel: "warn" });
  await DBOS.launch();
  let keys = 0;
  return {
    name: "DBOS",
    async runOne() {
      const handle = await DBOS.startWorkflow(noop)();
      await handle.getResult();
    },
    async waiting(count) {
      const waits = await Promise.all(
        Array.from({ length: count }, async () => {
          const key = `k${keys++}`;
          const isReady = ready.expect(key);
          const handle = await DBOS.startWorkflow(waiter)(key);
          await isReady;
          return { key, workflowID: handle.workflowID, result: () => handle.getResult() };
        }),
      );
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      return waits;
    },
    async resume(w) {
      const at = resumed.expect(w.key);
      await DBOS.send(w.workflowID, "ok", "tok");
      return { resumed: at, finished: w.result() };
    },
    close: () => DBOS.shutdown(),
  };
}
