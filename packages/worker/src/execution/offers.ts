import { z } from "zod";
import {
  CHANNELS, DECLINE_OFFERS_SQL, ledgerEntryFromRow, LedgerRowSchema, parseStored, prepared, wakeWorkers, withTransaction, type LedgerEntry, type LedgerRow, type Pool, type Queryable,
} from "@svc/runtime/engine";
import { RETURN_CLAIMED, SELECT_CLAIMED_WITH_LEDGER, type Claim, type ClaimedRun } from "./claim.ts";
import type { LedgerCache } from "./ledger-cache.ts";

/**
 * A resume a completion offered to this worker (svc_complete_waitpoint, migrations 0018 and 0026):
 * the run is already claimed for it. The NOTIFY carries the claim itself (the run and its whole
 * ledger); or, offered to the worker that suspended the run, the run and only the entries the
 * completion resolved (`resolved`: the rest is this worker's copy, see LedgerCache); or only its
 * claim token when the run and its ledger would not fit in a NOTIFY payload.
 */
export type Offer =
  | { claim: Claim }
  | { resolved: { run: ClaimedRun; entries: LedgerEntry[]; version: number } }
  | { claimToken: string; runId: string };

const timestamp = z.string().transform((text, ctx) => {
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) ctx.addIssue({ code: "custom", message: `not a timestamp: ${text}` });
  return date;
});

/** The run as svc_complete_waitpoint puts it in an offer: the columns of CLAIMED_COLUMNS, as JSON. */
const OfferedRunSchema = z.object({
  id: z.string(),
  environment_id: z.string(),
  task_identifier: z.string(),
  queue_name: z.string(),
  payload: z.string().nullable(),
  payload_type: z.string(),
  attempt_number: z.number().int(),
  ledger_epoch: z.number().int(),
  max_attempts: z.number().int().nullable(),
  max_duration_s: z.number().nullable(),
  tags: z.array(z.string()),
  is_test: z.boolean(),
  idempotency_key_user: z.string().nullable(),
  // An offer from a build before migration 0037 (a rolling deploy) has no scope.
  idempotency_key_scope: z.string().nullable().default(null),
  batch_id: z.string().nullable(),
  trigger_function: z.string(),
  created_at: timestamp,
  updated_at: timestamp,
  claim_token: z.string(),
  traceparent: z.string().nullable(),
  wait_traceparent: z.string().nullable(),
  // An offer from a build before migration 0041 (a rolling deploy) has none of these: read as empty.
  metadata: z.unknown().default(null),
  metadata_ops_epoch: z.number().int().nullable().default(null),
  metadata_ops: z.number().int().nullable().default(null),
  parent_run_id: z.string().nullable().default(null),
}) satisfies z.ZodType<ClaimedRun, unknown>;

const LedgerRowsSchema = z.array(LedgerRowSchema).nullable();
/**
 * An offer's ledger: `{ version, entries }` (all of it), `{ version, resolved }` (what the
 * completion resolved), or the bare list of entries that completions of a build before migration
 * 0026 send (a rolling deploy), whose version is not known.
 */
const OfferedLedgerSchema = z.union([
  z.strictObject({ version: z.number().int(), entries: LedgerRowsSchema }),
  z.strictObject({ version: z.number().int(), resolved: LedgerRowsSchema }),
  LedgerRowsSchema,
]);
/** `start`: a run's first attempt a trigger offered (engine/runs/transitions/offer-start.ts); absent: a resume. */
const FullOfferSchema = z.object({ run: OfferedRunSchema, ledger: OfferedLedgerSchema, start: z.literal(true).optional() });
const TokenOfferSchema = z.object({ claimToken: z.string(), runId: z.string() });

const entriesOf = (rows: unknown[] | null): LedgerEntry[] => ((rows ?? []) as LedgerRow[]).map(ledgerEntryFromRow);

/**
 * Parses an offer NOTIFY. Only svc_complete_waitpoint sends on a worker's offer channel: a payload
 * of another shape is a bug, thrown as a StoredDataError that names the mismatch (the run stays
 * claimed until its short offer lease lapses and the lapsed-lease timer resumes it).
 */
export function parseOffer(payload: string): Offer {
  let json: unknown;
  try {
    json = JSON.parse(payload);
  } catch (error) {
    throw new Error(`an offer NOTIFY is not JSON: ${(error as Error).message}`, { cause: error });
  }
  // Told apart by their keys, so that a mismatch names the field at fault.
  if (typeof json !== "object" || json === null || !("run" in json)) return parseStored(TokenOfferSchema, json, "an offer NOTIFY");
  const { run, ledger, start } = parseStored(FullOfferSchema, json, "an offer NOTIFY");
  if (start) return { claim: startOffered(run, entriesOf(Array.isArray(ledger) ? ledger : null), 0, "offer") };
  if (ledger === null || Array.isArray(ledger)) return { claim: { run, previousStatus: "WAITING", ledger: entriesOf(ledger), ledgerVersion: null, ledgerFrom: "offer" } };
  if ("resolved" in ledger) return { resolved: { run, entries: entriesOf(ledger.resolved), version: ledger.version } };
  return { claim: { run, previousStatus: "WAITING", ledger: entriesOf(ledger.entries), ledgerVersion: ledger.version, ledgerFrom: "offer" } };
}

/**
 * The claim of an offered start: a first attempt (no ledger), QUEUED before the offer with no TTL
 * and no start time (which a hand-back restores).
 */
function startOffered(run: ClaimedRun, ledger: LedgerEntry[], ledgerVersion: number | null, from: Claim["ledgerFrom"]): Claim {
  return { run, previousStatus: "QUEUED", beforeStart: { expireAt: null, startedAt: null }, ledger, ledgerVersion, ledgerFrom: from };
}

/**
 * The claim of an offer that carries only the entries its completion resolved: this worker's copy
 * of the run's ledger at the version the completion started from (taken out of `cache`), with
 * those entries; null when the cache has no such copy (this worker restarted, dropped it, or the
 * ledger changed since: the caller loads the offer instead).
 */
export function claimFromCache(cache: LedgerCache, offer: { run: ClaimedRun; entries: LedgerEntry[]; version: number }): Claim | null {
  const kept = cache.take(offer.run.id, offer.version - 1, offer.run.ledger_epoch);
  if (!kept) return null;
  // Later entries win in LedgerSession: the resolved ones replace the copy's unresolved ones.
  return { run: offer.run, previousStatus: "WAITING", ledger: kept.concat(offer.entries), ledgerVersion: offer.version, ledgerFrom: "cache" };
}

/** Loads an offer that came with only its claim token; null when it was withdrawn meanwhile. */
export async function loadOffer(db: Queryable, runId: string, claimToken: string): Promise<Claim | null> {
  const { rows } = await db.query<ClaimedRun & { offered_start: boolean; ledger: LedgerRow[] | null; ledger_version: number | null }>(prepared(
    "svc_load_offer",
    `WITH claimed AS (SELECT ${RETURN_CLAIMED}, r.offered_start FROM runs r WHERE r.id = $1 AND r.claim_token = $2 AND r.status = 'EXECUTING' AND r.offered_at IS NOT NULL)
     ${SELECT_CLAIMED_WITH_LEDGER}`,
    [runId, claimToken],
  ));
  const row = rows[0];
  if (!row) return null;
  const { ledger, ledger_version, offered_start, ...run } = row;
  if (offered_start) return startOffered(run, entriesOf(ledger), ledger_version, "claim");
  return { run, previousStatus: "WAITING", ledger: entriesOf(ledger), ledgerVersion: ledger_version, ledgerFrom: "claim" };
}

/**
 * Whether an offer still stands: the run is still claimed with the offer's token (not canceled,
 * not taken over since). Read once by an offered execution before its first step or write.
 */
export async function offerStands(db: Queryable, runId: string, claimToken: string): Promise<boolean> {
  const { rowCount } = await db.query(prepared("svc_offer_stands", `SELECT 1 FROM runs WHERE id = $1 AND claim_token = $2 AND status = 'EXECUTING'`, [runId, claimToken]));
  return (rowCount ?? 0) > 0;
}

/**
 * Gives back offers this worker will not run (no free slot, or it is stopping), in one statement,
 * fenced by their claim tokens: a resume waits again, same attempt, with its resume due now; a
 * start is QUEUED again as if never claimed, claimable now. One NOTIFY announces the resumes to
 * every worker (a worker with a free slot claims them through the fast path), and the starts wake
 * the workers of their queues (wakeWorkers); what nobody takes at once waits in `runs` for the
 * next claim. Offers never go to runs of queues with a concurrencyLimit, so none is one.
 * Returns the runs given back (the rest were canceled or withdrawn meanwhile).
 */
export async function declineOffers(db: Pool, environmentId: string, offers: { runId: string; claimToken: string }[], now: Date): Promise<Set<string>> {
  return withTransaction(db, async (tx) => {
    const { rows } = await tx.query<{ id: string; queue_name: string; start: boolean }>(
      DECLINE_OFFERS_SQL,
      [offers.map((o) => o.runId), offers.map((o) => o.claimToken), now],
    );
    if (rows.length === 0) return new Set();
    const ids = rows.filter((r) => !r.start).map((r) => r.id);
    // ≤ 100 run ids per payload, as completions send them; the middle field names no waitpoint.
    for (let i = 0; i < ids.length; i += 100) {
      await tx.query(`SELECT pg_notify($1, $2)`, [CHANNELS.resume, `${environmentId} - ${ids.slice(i, i + 100).join(",")}`]);
    }
    const starts = new Map<string, number>();
    for (const r of rows) if (r.start) starts.set(r.queue_name, (starts.get(r.queue_name) ?? 0) + 1);
    await wakeWorkers(tx, [...starts].map(([queueName, count]) => ({ environmentId, queueName, count })), now);
    return new Set(rows.map((r) => r.id));
  });
}
