import { completeToken, triggerRunInTransaction, withTransaction } from "../packages/runtime/src/engine/index.ts";
import { task } from "../packages/runtime/src/sdk/index.ts";
import { postJson } from "./http-client.ts";
import { Completions, type PeerSide } from "./peer-side.ts";
import { completeOverHttp, markFor, suspendedRuns, waiter } from "./resume-latency.ts";
import { benchStack } from "./setup.ts";
import { now } from "./stats.ts";

const noop = task({ id: "peer-noop", run: async () => 1 });

/**
 * svc as `pnpm bench`'s other scenarios run it: the API in a process of its own, triggered over
 * HTTP (keep-alive) from this process, where the worker runs. A unit of work is a run of a task
 * that returns 1 (inserted with its queue job, claimed with an attempt, completed); a wait is
 * `wait.forToken` in `bench-wait`, resumed by `POST /api/v1/waitpoints/tokens/{id}/complete`.
 */
export async function svcSide(url: string): Promise<PeerSide<string>> {
  const stack = await benchStack(url, { tasks: [noop, waiter], api: true, concurrency: 50 });
  const key = stack.project.environments.dev.secretKey;
  const completions = new Completions();
  stack.worker!.events.on("runFinished", (e) => completions.done(e.runId));
  const startedAt = new Map<string, number>();
  stack.worker!.events.on("runStarted", (e) => startedAt.set(e.runId, now()));

  const finishedNext = () => stack.worker!.events.next("runFinished", () => true, 60_000);
  return {
    name: "svc",
    async runOne() {
      const res = await postJson(`${stack.apiUrl}/api/v1/tasks/peer-noop/trigger`, '{"payload":{}}', { authorization: `Bearer ${key}` });
      if (res.status !== 200) throw new Error(`trigger failed: ${res.status} ${res.text}`);
      await completions.wait((JSON.parse(res.text) as { id: string }).id);
    },
    waiting: (count) => suspendedRuns(stack, count),
    async resume(token) {
      const resumed = markFor(token);
      // One resume at a time: the next run to finish is this one.
      const finished = finishedNext();
      await completeOverHttp(stack, token);
      return { resumed, finished };
    },
    // The same work without the API process: what the HTTP hop and the API cost, next to peers
    // whose clients write to Postgres themselves.
    async extra(n) {
      const triggered: number[] = [];
      const started: number[] = [];
      startedAt.clear();
      for (let i = 0; i < n; i++) {
        const t0 = now();
        const run = await withTransaction(stack.engine.db, (tx) => triggerRunInTransaction(stack.engine, tx, stack.env, "peer-noop", {}));
        await completions.wait(run.id);
        triggered.push(now() - t0);
        started.push(startedAt.get(run.id)! - t0);
        startedAt.clear();
        await pause();
      }
      // As graphile-worker's client does (add_job): the client's own statement on Postgres, here
      // svc_trigger (a run that waits for a worker's claim, as a trigger inside a transaction is).
      const inSql: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = now();
        const { rows } = await stack.engine.db.query<{ run_id: string }>("SELECT run_id FROM svc_trigger($1, 'peer-noop', '{}'::jsonb, NULL)", [stack.env.id]);
        await completions.wait(rows[0]!.run_id);
        inSql.push(now() - t0);
        await pause();
      }
      const completed: number[] = [];
      const tokens = await suspendedRuns(stack, n);
      for (const token of tokens) {
        const resumed = markFor(token);
        const finished = finishedNext();
        const t0 = now();
        await withTransaction(stack.engine.db, (tx) => completeToken(stack.engine, tx, token, { ok: true }));
        completed.push((await resumed) - t0);
        await finished;
        await pause();
      }
      return [
        { label: "svc in-process trigger (no API) → done", samples: triggered },
        { label: "  the same runs: trigger → the attempt starts", samples: started },
        { label: "svc_trigger in SQL (no API) → done", samples: inSql },
        { label: "svc in-process completeToken (no API) → code", samples: completed },
      ];
    },
    close: () => stack.close(),
  };
}

/** 0–3 ms between one-at-a-time units, as in the resume scenario: no lockstep with any timer. */
export const pause = () => new Promise((r) => setTimeout(r, Math.random() * 3));
