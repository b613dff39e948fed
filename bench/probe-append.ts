// Temporary probe: where the time of an .in append to a waiting run goes.
import { appendRecords, completeToken, createToken, startSession, withTransaction } from "../packages/runtime/src/engine/index.ts";
import { forToken, task } from "../packages/runtime/src/sdk/index.ts";
import { sessions } from "../packages/runtime/src/sdk/namespaces.ts";
import { benchDatabase, benchStack } from "./setup.ts";
const resumedAt = new Map<string, (t: number) => void>();
const chat = task({ id: "probe-chat", run: async (p: { sessionId: string }) => { const s = sessions.open(p.sessionId); for (;;) { const m = await s.in.wait(); if (!m.ok) return 0; resumedAt.get(p.sessionId)?.(performance.now()); } } });
const tok = task({ id: "probe-token", run: async (p: { tokenId: string }) => { await forToken(p.tokenId); resumedAt.get(p.tokenId)?.(performance.now()); return 1; } });
const db = await benchDatabase("probe");
const stack = await benchStack(db.url, { tasks: [chat, tok], concurrency: 20 });
const pct = (xs: number[]) => { xs.sort((a, b) => a - b); return `p50 ${xs[Math.floor(xs.length / 2)]!.toFixed(2)} p90 ${xs[Math.floor(xs.length * 0.9)]!.toFixed(2)}`; };
const appendMs: number[] = [], appendToCode: number[] = [], tokMs: number[] = [], tokToCode: number[] = [];
for (let i = 0; i < 300; i++) {
  // a session whose run waits
  let susp = stack.worker!.events.next("runSuspended");
  const { session } = await startSession(stack.engine, stack.env, { type: "x", taskIdentifier: "probe-chat", triggerConfig: { basePayload: {} } });
  await susp;
  susp = stack.worker!.events.next("runSuspended");
  const code = new Promise<number>((r) => resumedAt.set(session.id, r));
  const t0 = performance.now();
  await appendRecords(stack.engine, stack.env, session.id, "in", [{ data: "{}" }]);
  appendMs.push(performance.now() - t0);
  appendToCode.push((await code) - t0);
  await susp;
  // a token a run waits on
  const { waitpoint } = await createToken(stack.engine, stack.env.id, { timeout: "1h" });
  susp = stack.worker!.events.next("runSuspended");
  await withTransaction(stack.engine.db, async (tx) => { const { triggerRunInTransaction } = await import("../packages/runtime/src/engine/index.ts"); await triggerRunInTransaction(stack.engine, tx, stack.env, "probe-token", { tokenId: waitpoint.id }); });
  await susp;
  const fin = stack.worker!.events.next("runFinished");
  const code2 = new Promise<number>((r) => resumedAt.set(waitpoint.id, r));
  const t1 = performance.now();
  await completeToken(stack.engine, stack.engine.db, waitpoint.id, {});
  tokMs.push(performance.now() - t1);
  tokToCode.push((await code2) - t1);
  await fin;
}
console.log("append (engine call, incl. flushWal)", pct(appendMs.slice(50)));
console.log("append → code after wait          ", pct(appendToCode.slice(50)));
console.log("completeToken (engine call)       ", pct(tokMs.slice(50)));
console.log("completeToken → code after wait   ", pct(tokToCode.slice(50)));
await stack.close();
await db.close();
process.exit(0);
