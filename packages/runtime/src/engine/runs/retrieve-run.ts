import cronstrue from "cronstrue";
import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import type { EngineDeps } from "../deps.ts";
import { getPacket, packetSize } from "../packets/store.ts";
import { packetDownloadUrl } from "../packets/urls.ts";
import { loadStoredPacket, type Packet } from "./payloads.ts";
import { packetAsJson, presentRelatedRun, presentRunError, type RelatedRunObject, type RunErrorObject } from "./run-object.ts";
import { getRun, type RunRow } from "./store.ts";

/** Stored packets larger than this come back as a presigned URL rather than inline. */
export const INLINE_PACKET_LIMIT = 512 * 1024;
/** At most this many children are listed in `relatedRuns.children`. */
export const MAX_LISTED_CHILDREN = 100;

export interface ScheduleRef {
  id: string;
  externalId?: string;
  deduplicationKey?: string;
  generator: { type: "CRON"; expression: string; description: string };
}

/** `GET /api/v3/runs/{id}`: the run object plus payload, output, error, schedule and relatives. */
export interface RetrievedRun extends RelatedRunObject {
  payload?: unknown;
  payloadPresignedUrl?: string;
  output?: unknown;
  outputPresignedUrl?: string;
  error?: RunErrorObject;
  schedule?: ScheduleRef;
  relatedRuns: { root?: RelatedRunObject; parent?: RelatedRunObject; children?: RelatedRunObject[] };
  attemptCount: number;
  attempts: never[];
}

/** Loads and presents one run of the environment; NotFoundError("Run not found") otherwise. */
export async function retrieveRun(deps: Pick<EngineDeps, "db" | "apiUrl" | "clock">, environmentId: string, runId: string): Promise<RetrievedRun> {
  const run = await getRun(deps.db, runId, environmentId);
  if (!run) throw new NotFoundError("Run not found");
  const result: RetrievedRun = {
    ...presentRelatedRun(run),
    relatedRuns: await relatedRuns(deps.db, run),
    attemptCount: run.attempt_number,
    attempts: [],
  };
  const payload = await presentPacket(deps, environmentId, { data: run.payload, type: run.payload_type });
  if (payload.url) result.payloadPresignedUrl = payload.url;
  else if (payload.value !== undefined) result.payload = payload.value;
  if (run.status === "COMPLETED" && run.output !== null) {
    const output = await presentPacket(deps, environmentId, { data: run.output, type: run.output_type ?? "application/json" });
    if (output.url) result.outputPresignedUrl = output.url;
    else if (output.value !== undefined) result.output = output.value;
  }
  const error = presentRunError(run.error);
  if (error) result.error = error;
  if (run.schedule_id) {
    const schedule = await scheduleRef(deps.db, run.schedule_id);
    if (schedule) result.schedule = schedule;
  }
  return result;
}

/** Inline JSON value, or a download URL for a large stored packet. */
async function presentPacket(deps: Pick<EngineDeps, "db" | "apiUrl" | "clock">, environmentId: string, packet: Packet): Promise<{ value?: unknown; url?: string }> {
  if (packet.data === null) return {};
  if (packet.type === "application/store") {
    const size = await packetSize(deps.db, environmentId, packet.data);
    if (size === null) return {}; // never uploaded: nothing to show
    if (size > INLINE_PACKET_LIMIT) {
      const stored = await getPacket(deps.db, environmentId, packet.data);
      return stored ? { url: packetDownloadUrl(deps.apiUrl, stored, deps.clock.now()) } : {};
    }
    return { value: packetAsJson(await loadStoredPacket(deps.db, environmentId, packet)) };
  }
  return { value: packetAsJson(packet) };
}

async function relatedRuns(db: Queryable, run: RunRow): Promise<RetrievedRun["relatedRuns"]> {
  const related: RetrievedRun["relatedRuns"] = {};
  const ids = [run.parent_run_id, run.root_run_id].filter((id): id is string => id !== null && id !== run.id);
  if (ids.length > 0) {
    const { rows } = await db.query<RunRow>(`SELECT * FROM runs WHERE id = ANY($1::text[]) AND environment_id = $2`, [ids, run.environment_id]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const parent = run.parent_run_id ? byId.get(run.parent_run_id) : undefined;
    const root = run.root_run_id ? byId.get(run.root_run_id) : undefined;
    if (parent) related.parent = presentRelatedRun(parent);
    if (root) related.root = presentRelatedRun(root);
  }
  const { rows: children } = await db.query<RunRow>(
    `SELECT * FROM runs WHERE parent_run_id = $1 ORDER BY created_at, id LIMIT $2`,
    [run.id, MAX_LISTED_CHILDREN],
  );
  related.children = children.map(presentRelatedRun);
  return related;
}

/**
 * The run's schedule, read defensively: the schedules table belongs to the schedules module and
 * may not exist in this database. Omitted (undefined) when its cron expression cannot be found.
 */
async function scheduleRef(db: Queryable, scheduleId: string): Promise<ScheduleRef | undefined> {
  const { rows: exists } = await db.query<{ t: string | null }>(`SELECT to_regclass('schedules')::text AS t`);
  if (!exists[0]?.t) return undefined;
  const { rows } = await db.query<Record<string, unknown>>(`SELECT * FROM schedules WHERE id = $1`, [scheduleId]);
  const row = rows[0];
  if (!row) return undefined;
  const text = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined);
  const expression = text(row.cron) ?? text(row.expression) ?? text(row.cron_expression) ?? text(row.generator_expression);
  if (!expression) return undefined;
  let description = text(row.generator_description) ?? text(row.description);
  if (!description) {
    try {
      description = cronstrue.toString(expression);
    } catch {
      description = expression;
    }
  }
  const schedule: ScheduleRef = { id: scheduleId, generator: { type: "CRON", expression, description } };
  const externalId = text(row.external_id);
  if (externalId) schedule.externalId = externalId;
  const deduplicationKey = text(row.deduplication_key);
  if (deduplicationKey && row.user_provided_deduplication_key !== false) schedule.deduplicationKey = deduplicationKey;
  return schedule;
}
