import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { readRunShape, type Environment, type RunShape, type ShapeRead } from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";
import type { Principal } from "../auth/principal.ts";
import { bearerToken } from "../auth/principal.ts";
import { sendError } from "../http/errors.ts";
import type { SubscriptionCounter } from "./subscription-limits.ts";
import { runShapeRow } from "./run-shape-row.ts";
import {
  changesBody, INITIAL_OFFSET, MAX_OFFSET_LENGTH, MUST_REFETCH_BODY, offsetOfSnapshot, projectRow, RUN_COLUMNS, schemaHeader, shapeColumns, snapshotOfOffset,
} from "./shape-wire.ts";

const ColumnList = z.string().max(2048).regex(/^[A-Za-z,]*$/, "must be column names separated by commas");

/** The ElectricSQL protocol's query parameters (what `@electric-sql/client` sends), shared by the three shape routes. */
export const SHAPE_QUERY = {
  offset: z
    .string()
    .max(MAX_OFFSET_LENGTH)
    .regex(/^(-1|[0-9]+_[0-9]+(_[0-9]+(\.[0-9]+)*)?)$/, "must be -1 or an offset this server answered with")
    .optional()
    .describe("Where the client is: `-1` for the whole shape, else the `electric-offset` of the last answer"),
  handle: z.string().max(512).optional().describe("The `electric-handle` of the last answer"),
  shape_id: z.string().max(512).optional().describe("What clients before @electric-sql/client 1.0 send for `handle`"),
  live: z.enum(["true", "false"]).optional().describe("`true`: wait (long poll) until something changed, or answer up to date after about 20 s"),
  cursor: z.string().max(512).optional().describe("The `electric-cursor` of the last answer (a cache buster; ignored)"),
  expired_handle: z.string().max(512).optional().describe("A handle the client was told to drop (ignored)"),
  log: z.enum(["full", "changes_only"]).optional().describe("Ignored: every change carries the whole row"),
  skipColumns: ColumnList.optional().describe("Columns to leave out of the rows, comma-separated (`payload,output`); id, friendlyId, taskIdentifier, status, createdAt and updatedAt are always sent"),
};

const ShapeQueryObject = z.object(SHAPE_QUERY);
export type ShapeQuery = z.infer<typeof ShapeQueryObject>;

/** Seconds a client refused for too many open subscriptions is asked to wait. */
const SUBSCRIPTION_RETRY_AFTER_SECONDS = 5;

/** The answer headers, for the OpenAPI document. */
export const SHAPE_SUCCESS_HEADERS = {
  "electric-offset": { description: "Send it back as `offset`: the snapshot this answer was read under", required: true, schema: { type: "string" } },
  "electric-handle": { description: "Send it back as `handle`", required: true, schema: { type: "string" } },
  "electric-schema": { description: "The columns' types (values travel as Postgres text)", required: true, schema: { type: "string" } },
  "electric-cursor": { description: "Send it back as `cursor` on live requests", required: true, schema: { type: "string" } },
  "electric-up-to-date": { description: "Present: the body ends with the `up-to-date` control message", required: true, schema: { type: "string" } },
};

export interface ShapeRequest {
  deps: AppDeps;
  principal: Principal;
  environment: Environment;
  shape: RunShape;
  /** The handle this shape answers with; a request that echoes another gets 409 must-refetch. */
  handle: string;
  query: ShapeQuery;
  request: FastifyRequest;
  reply: FastifyReply;
  counter: SubscriptionCounter;
  livePollMs: number;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Columns to leave out: the request's `skipColumns` and the public token's `realtime.skipColumns` claim. */
function skippedColumns(principal: Principal, query: ShapeQuery): Set<string> {
  const skip = new Set((query.skipColumns ?? "").split(",").filter((c) => c.length > 0));
  if (principal.kind === "publicJwt") {
    const realtime = principal.claims.realtime as { skipColumns?: unknown } | undefined;
    if (realtime && Array.isArray(realtime.skipColumns)) for (const c of realtime.skipColumns) if (typeof c === "string") skip.add(c);
  }
  return skip;
}

/**
 * Answers one request of a realtime run shape in the ElectricSQL protocol:
 * - `offset=-1`: every row of the shape (`insert`), up to date;
 * - an offset with `live` unset: the rows changed since it (`update`), up to date, at once;
 * - `live=true`: the same, but when nothing changed it waits for a change (woken by the run
 *   change hub, then reading again) until the long poll ends, and answers up to date.
 * Every answer carries the whole row of each changed run and ends with `up-to-date`; its offset
 * is the snapshot it was read under, so any API process answers the next request exactly.
 */
export async function serveShape(r: ShapeRequest): Promise<FastifyReply> {
  const { query, request, reply } = r;
  const columns = shapeColumns(skippedColumns(r.principal, query));
  const legacyStatuses = header(request, "x-trigger-api-version") === undefined;
  const answer = (read: ShapeRead, operation: "insert" | "update") => {
    const rows = read.rows.map((row) => projectRow(runShapeRow(row, { legacyStatuses }), columns));
    return send(r, changesBody(rows, operation), offsetOfSnapshot(read.snapshot), schemaHeader(columns), read.snapshot.split(":")[1]!);
  };
  const db = r.deps.engine.db;
  const offset = query.offset ?? INITIAL_OFFSET;
  const handle = query.handle ?? query.shape_id;
  if (offset === INITIAL_OFFSET || handle === undefined) return answer(await readRunShape(db, r.environment.id, r.shape, null), "insert");
  if (handle !== r.handle) return mustRefetch(r);
  // Of an offset's form but not a snapshot (this server never answered with it): start over.
  const since = snapshotOfOffset(offset);
  if (since === null) return mustRefetch(r);
  if (query.live !== "true") {
    const read = await readRunShape(db, r.environment.id, r.shape, since);
    return read.sinceAhead ? mustRefetch(r) : answer(read, "update");
  }

  // Public tokens hold a bounded number of live requests open (secret keys are not counted).
  const held = r.principal.kind === "publicJwt" ? r.counter.acquire(bearerToken(header(request, "authorization")) ?? "", request.ip) : null;
  if (held && !held.ok) {
    reply.header("retry-after", String(SUBSCRIPTION_RETRY_AFTER_SECONDS));
    const who = held.by === "token" ? "this token" : `public tokens from ${request.ip}`;
    return sendError(reply, 429, `Too many open subscriptions: ${who} may hold at most ${held.max} live requests at once; retry in ${SUBSCRIPTION_RETRY_AFTER_SECONDS} s`);
  }
  const abort = new AbortController();
  const onClose = () => abort.abort();
  reply.raw.once("close", onClose);
  const hub = r.deps.runChanges;
  const subscription = hub?.subscribe(r.environment.id, r.shape);
  let releaseWatch: (() => void) | undefined;
  try {
    releaseWatch = await hub?.watches.hold(r.environment.id);
    // Jittered, so that subscribers opened together do not all come back together.
    const deadline = Date.now() + Math.round(r.livePollMs * (0.85 + Math.random() * 0.3));
    let snapshot = since;
    for (;;) {
      const read = await readRunShape(db, r.environment.id, r.shape, snapshot);
      if (read.sinceAhead) return mustRefetch(r);
      if (read.rows.length > 0 || abort.signal.aborted) return answer(read, "update");
      snapshot = read.snapshot;
      const outcome = subscription ? await subscription.wait(Math.max(0, deadline - Date.now()), abort.signal) : await sleep(deadline - Date.now(), abort.signal);
      if (outcome !== "changed") return answer({ ...read, rows: [] }, "update");
    }
  } finally {
    reply.raw.off("close", onClose);
    subscription?.close();
    releaseWatch?.();
    held?.release();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<"timeout" | "aborted"> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve("timeout"), Math.max(0, ms));
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve("aborted");
    }, { once: true });
  });
}

function electricHeaders(r: ShapeRequest, offset: string, handle: string): void {
  r.reply.header("electric-offset", offset).header("electric-handle", handle);
  // Clients that do not send x-trigger-electric-version (before @electric-sql/client 1.0) read these names.
  if (header(r.request, "x-trigger-electric-version") === undefined) r.reply.header("electric-chunk-last-offset", offset).header("electric-shape-id", handle);
}

function send(r: ShapeRequest, body: string, offset: string, schema: string, cursor: string): FastifyReply {
  electricHeaders(r, offset, r.handle);
  return r.reply
    .header("electric-schema", schema)
    .header("electric-cursor", cursor)
    .header("electric-up-to-date", "true")
    .header("cache-control", "no-store")
    .type("application/json; charset=utf-8")
    .send(body);
}

/** 409 with the handle to use: the client drops its rows and reads the shape from the start. */
function mustRefetch(r: ShapeRequest): FastifyReply {
  electricHeaders(r, INITIAL_OFFSET, r.handle);
  return r.reply.status(409).header("cache-control", "no-store").header("x-should-retry", "false").type("application/json; charset=utf-8").send(MUST_REFETCH_BODY);
}

/** The schema header of every column (the OpenAPI document's example). */
export const FULL_SCHEMA_HEADER = schemaHeader(RUN_COLUMNS);
