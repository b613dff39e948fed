import { randomUUID } from "node:crypto";
import pg from "pg";
import type { Queryable } from "../db/queryable.ts";
import { CHANNELS } from "../engine/channels.ts";
import { parseResumePayload } from "../engine/waitpoints/complete-waitpoint.ts";
import { newId } from "../ids.ts";

/**
 * A run suspended in `wait.forToken(tokenId)`, made by SQL: a WAITING run with one unresolved
 * ledger row pointing at the token (what the in-run side writes before it suspends).
 */
export async function waitingRunOn(db: Queryable, environmentId: string, tokenId: string): Promise<string> {
  const runId = newId.run();
  await db.query(
    `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name)
     SELECT $1, e.id, e.project_id, 'approval-task', 'WAITING', 'task/approval-task' FROM environments e WHERE e.id = $2`,
    [runId, environmentId],
  );
  await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id) VALUES ($1, 0, 'token#0', 'token', $2, $2)`,
    [runId, tokenId],
  );
  return runId;
}

/** Whether the run's resume is recorded as due (set by a completion, cleared by a worker's claim). */
export async function resumeDue(db: Queryable, runId: string): Promise<boolean> {
  const { rows } = await db.query<{ due: boolean }>(`SELECT resume_due_at IS NOT NULL AS due FROM runs WHERE id = $1`, [runId]);
  return rows[0]!.due;
}

/** The run's (one) ledger row: whether it resolved, and with what. */
export async function ledgerRow(db: Queryable, runId: string) {
  const { rows } = await db.query(`SELECT resolved, outcome FROM run_ledger WHERE run_id = $1`, [runId]);
  return rows[0] as { resolved: boolean; outcome: { ok: boolean; output?: string | null } };
}

/** Listens on the resume channel, as workers do, and counts the wake-ups that name a run. */
export async function listenForResumes(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`LISTEN "${CHANNELS.resume}"`);
  const payloads: string[] = [];
  client.on("notification", (m) => payloads.push(m.payload ?? ""));
  return {
    /** Wake-ups naming `runId` so far: a sentinel NOTIFY sent now arrives after all committed before it. */
    async count(runId: string): Promise<number> {
      const sentinel = `flush ${randomUUID()}`;
      const flushed = new Promise<void>((resolve) => {
        const onNotification = (m: pg.Notification) => {
          if (m.payload !== sentinel) return;
          client.off("notification", onNotification);
          resolve();
        };
        client.on("notification", onNotification);
      });
      await client.query(`SELECT pg_notify($1, $2)`, [CHANNELS.resume, sentinel]);
      await flushed;
      return payloads.filter((p) => parseResumePayload(p)?.runIds.includes(runId)).length;
    },
    close: () => client.end(),
  };
}
