import { flushWal, prepared, withTransaction, type Queryable } from "../../db/queryable.ts";
import type { SessionChannel } from "../../contracts/sessions.ts";
import { NotFoundError, ValidationError } from "../../errors.ts";
import { randomId } from "../../ids.ts";
import { CHANNELS } from "../channels.ts";
import type { EngineDeps } from "../deps.ts";
import { FINAL_STATUSES } from "../runs/statuses.ts";
import type { Environment } from "../tenancy/environments.ts";
import { RESUME_OFFERS_PARAMETER, SEND_OFFERS } from "../waitpoints/resume-offers.ts";
import type { RecordHeader } from "./records.ts";
import { ensureSessionRun } from "./session-runs.ts";
import { getSession, sessionStatus, type SessionRow } from "./store.ts";

export interface RecordInput {
  /** The record's JSON value as text; null for a control record (see `headers`). */
  data: string | null;
  headers?: RecordHeader[];
  /** Makes the append idempotent: a part id the channel already has is not stored again. */
  partId?: string;
}

export interface AppendInput extends RecordInput {
  io: SessionChannel;
}

/** A run's appends: fenced by its claim. */
export interface RunWriter {
  runId: string;
  claimToken: string;
}

export interface AppendResults {
  sessionId: string;
  /** Per input: its sequence number, and whether it was already stored (nothing written). */
  results: { seq: number; duplicate: boolean }[];
  /** Whether the append started a run of the session (an `.in` record when it had no live run). */
  runStarted: boolean;
}

/** What `svc_append_session_records` needs besides the records: channels, and how waits complete. */
const APPEND_CONTEXT = JSON.stringify({
  recordChannel: CHANNELS.sessionRecords,
  inChannel: CHANNELS.sessionIn,
  finalStatuses: FINAL_STATUSES,
  resumeChannel: CHANNELS.resume,
  readyChannel: CHANNELS.runsReady,
  offers: JSON.parse(RESUME_OFFERS_PARAMETER),
});

type Appended = { error: "fenced" | "not_found" | "closed" | "expired" } | { sessionId: string; needsRun: boolean; seqs: (number | string)[]; duplicates: boolean[] };

/** The key a session's channels are known by to subscribers: its externalId when it has one, else its id. */
export function streamKey(session: Pick<SessionRow, "external_id" | "id">): string {
  return session.external_id ?? session.id;
}

/**
 * Appends records to one channel of a session in one statement, its own transaction
 * (`svc_append_session_records`): under the session row's lock each record takes the next
 * sequence number; a record whose part id the channel already has is acknowledged without being
 * stored again (also once the session closed); each new one is announced to every API process's
 * subscribers (NOTIFY on CHANNELS.sessionRecords, see recordNotice). `.in` records also complete
 * every run's wait on `.in`, and when the session has no live run one is started (a second
 * transaction, rare). It commits without waiting for the WAL flush, so subscribers and resumed
 * runs see the records at once; this returns once they are durable (flushWal).
 *
 * Closed or expired sessions refuse new records (ValidationError, 400); unknown ones are a
 * NotFoundError; a `writer` whose claim was lost gets null (the run is fenced).
 */
export async function appendRecords(
  deps: Pick<EngineDeps, "clock" | "dispatcher" | "db">,
  env: Environment,
  ref: string,
  io: SessionChannel,
  inputs: RecordInput[],
  writer?: RunWriter,
): Promise<AppendResults | null> {
  const records = inputs.map((i) => ({ data: i.data, headers: i.headers ?? null, partId: i.partId ?? randomId() }));
  const { rows } = await deps.db.query<{ appended: Appended }>(
    prepared(
      "svc_append_session_records",
      `SELECT c.result AS appended, offers.sent AS offers_sent, set_config('synchronous_commit', 'off', true) AS async_commit
       FROM svc_append_session_records($1, $2, $3, $4, $5, $6, $7) AS c, LATERAL ${SEND_OFFERS} AS offers`,
      [env.id, ref, io, deps.clock.now(), JSON.stringify(records), writer ? JSON.stringify(writer) : null, APPEND_CONTEXT],
    ),
  );
  const appended = rows[0]!.appended;
  if ("error" in appended) {
    if (appended.error === "fenced") return null;
    if (appended.error === "not_found") throw new NotFoundError("Session not found");
    throw new ValidationError(`Cannot append to a ${appended.error} session`);
  }
  const results = appended.seqs.map((seq, i) => ({ seq: Number(seq), duplicate: appended.duplicates[i]! }));
  let runStarted = false;
  if (appended.needsRun) {
    runStarted = await withTransaction(deps.db, async (tx) => {
      // Under the row's lock again: another append may have started the run meanwhile, or a close come in.
      const session = await getSession(tx, env.id, appended.sessionId, "FOR UPDATE");
      return sessionStatus(session, deps.clock.now()) === "ACTIVE" && (await ensureSessionRun(deps, tx, env, session, "append")).started;
    });
  }
  if (results.some((r) => !r.duplicate)) await flushWal(deps.db);
  return { sessionId: appended.sessionId, results, runStarted };
}

/** Appends one record (see appendRecords); `runStarted`: the append started a run of the session. */
export async function appendRecord(deps: EngineDeps, env: Environment, ref: string, input: AppendInput): Promise<{ seq: number; duplicate: boolean; runStarted: boolean }> {
  const appended = await appendRecords(deps, env, ref, input.io, [input]);
  return { ...appended!.results[0]!, runStarted: appended!.runStarted };
}
