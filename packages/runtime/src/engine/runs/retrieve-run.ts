import cronstrue from "cronstrue";
import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import type { EngineDeps } from "../deps.ts";
import { getPacket, packetSize } from "../packets/store.ts";
import { packetDownloadUrl } from "../packets/urls.ts";
import { loadStoredPacket, type Packet } from "./payloads.ts";
import { presentedStatus } from "./pending-version.ts";
import { getRun, type RunRow } from "./store.ts";
import { waitsOfRuns, type RunWait } from "./waiting-for.ts";

/** Stored packets larger than this come back as a presigned URL rather than inline. */
export const INLINE_PACKET_LIMIT = 512 * 1024;
/** At most this many children are listed in `relatedRuns.children`. */
export const MAX_LISTED_CHILDREN = 100;

/** The cron schedule that triggered a run. */
export interface RunScheduleRef {
  id: string;
  externalId?: string;
  deduplicationKey?: string;
  expression: string;
  description: string;
}

/** A payload or output to show: the packet itself (inline), a download URL, or neither. */
export interface PacketView {
  inline?: Packet;
  url?: string;
}

/** What GET /api/v3/runs/{id} shows of a run, before presentation. */
export interface RunDetail {
  /** Its status as presented (pending-version.ts): PENDING_VERSION for a QUEUED run of a never-registered task. */
  run: RunRow;
  parent?: RunRow;
  root?: RunRow;
  /** The first MAX_LISTED_CHILDREN children, oldest first. */
  children: RunRow[];
  payload: PacketView;
  /** Only a completed run's output. */
  output: PacketView;
  schedule?: RunScheduleRef;
  /** What the run waits on: empty unless it is WAITING on a pending waitpoint. */
  waitingFor: RunWait[];
}

/** Loads one run of the environment with its packets, relatives, schedule and waits; NotFoundError("Run not found") otherwise. */
export async function retrieveRun(deps: Pick<EngineDeps, "db" | "apiUrl" | "clock">, environmentId: string, runId: string): Promise<RunDetail> {
  const stored = await getRun(deps.db, runId, environmentId);
  if (!stored) throw new NotFoundError("Run not found");
  const run = { ...stored, status: await presentedStatus(deps.db, stored) };
  const detail: RunDetail = {
    run,
    ...(await relatedRuns(deps.db, run)),
    payload: await packetView(deps, environmentId, { data: run.payload, type: run.payload_type }),
    output: run.status === "COMPLETED" && run.output !== null ? await packetView(deps, environmentId, { data: run.output, type: run.output_type ?? "application/json" }) : {},
    waitingFor: run.status === "WAITING" ? ((await waitsOfRuns(deps.db, [run.id])).get(run.id) ?? []) : [],
  };
  if (run.schedule_id) {
    const schedule = await scheduleRef(deps.db, run.schedule_id);
    if (schedule) detail.schedule = schedule;
  }
  return detail;
}

/** The packet itself, or a download URL for a large stored packet. */
async function packetView(deps: Pick<EngineDeps, "db" | "apiUrl" | "clock">, environmentId: string, packet: Packet): Promise<PacketView> {
  if (packet.data === null) return {};
  if (packet.type === "application/store") {
    const size = await packetSize(deps.db, environmentId, packet.data);
    if (size === null) return {}; // never uploaded: nothing to show
    if (size > INLINE_PACKET_LIMIT) {
      const stored = await getPacket(deps.db, environmentId, packet.data);
      return stored ? { url: packetDownloadUrl(deps.apiUrl, stored, deps.clock.now()) } : {};
    }
    return { inline: await loadStoredPacket(deps.db, environmentId, packet) };
  }
  return { inline: packet };
}

async function relatedRuns(db: Queryable, run: RunRow): Promise<Pick<RunDetail, "parent" | "root" | "children">> {
  const related: Pick<RunDetail, "parent" | "root"> = {};
  const ids = [run.parent_run_id, run.root_run_id].filter((id): id is string => id !== null && id !== run.id);
  if (ids.length > 0) {
    const { rows } = await db.query<RunRow>(`SELECT * FROM runs WHERE id = ANY($1::text[]) AND environment_id = $2`, [ids, run.environment_id]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const parent = run.parent_run_id ? byId.get(run.parent_run_id) : undefined;
    const root = run.root_run_id ? byId.get(run.root_run_id) : undefined;
    if (parent) related.parent = parent;
    if (root) related.root = root;
  }
  const { rows: children } = await db.query<RunRow>(
    `SELECT * FROM runs WHERE parent_run_id = $1 ORDER BY created_at, id LIMIT $2`,
    [run.id, MAX_LISTED_CHILDREN],
  );
  return { ...related, children };
}

/**
 * The run's schedule, read defensively: the schedules table belongs to the schedules module and
 * may not exist in this database. Omitted (undefined) when its cron expression cannot be found.
 */
async function scheduleRef(db: Queryable, scheduleId: string): Promise<RunScheduleRef | undefined> {
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
  const schedule: RunScheduleRef = { id: scheduleId, expression, description };
  const externalId = text(row.external_id);
  if (externalId) schedule.externalId = externalId;
  const deduplicationKey = text(row.deduplication_key);
  if (deduplicationKey && row.user_provided_deduplication_key !== false) schedule.deduplicationKey = deduplicationKey;
  return schedule;
}
