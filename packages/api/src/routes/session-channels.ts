import type { FastifyInstance } from "fastify";
import { z } from "zod";
import {
  appendRecord,
  drainRecordJson,
  findSession,
  isControl,
  lastRecord,
  MAX_RECORDS_PER_READ,
  NotFoundError,
  readRecords,
  sseRecordJson,
  streamKey,
  ValidationError,
  type SessionRow,
} from "@svc/runtime/engine";
import { storedText, unstorableReason } from "@svc/runtime/contracts";
import { AppendRecordResponse, MAX_SESSION_RECORD_BYTES, SESSION_ID_PREFIX, SessionChannel, SessionRecordsResponse, SessionRef } from "@svc/runtime/contracts";
import { hasSessionAccess, requireSecretKeyForOut, requireSessionAccess } from "../auth/session-access.ts";
import { SessionNames } from "../auth/session-names.ts";
import type { Principal } from "../auth/principal.ts";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { limitsOf } from "../http/limits.ts";
import { defineRoute } from "../http/route.ts";
import { batchFrame, HEARTBEAT_FRAME } from "../realtime/sse.ts";
import { holdStreamSubscription, openEventStream, parseHeader, requestHeader, TimeoutSeconds } from "../realtime/event-stream.ts";

const ChannelParams = z.object({ session: SessionRef, io: SessionChannel });
/** A part id: what the SDK sends (a 21-character nanoid), or any printable ASCII up to 128 characters. */
const PartId = z.string().regex(/^[\x21-\x7e]{1,128}$/, "must be 1–128 printable ASCII characters");
const SeqNumber = z.string().regex(/^[0-9]{1,15}$/, "must be a record sequence number (digits)");

/** Long-poll length of a subscription unless Timeout-Seconds says otherwise, and its bounds. */
export const DEFAULT_STREAM_TIMEOUT_SECONDS = 60;
const MAX_STREAM_TIMEOUT_SECONDS = 600;
/** How often an idle stream sends a comment line. */
const HEARTBEAT_MS = 15_000;
/** A subscriber that lets this much pile up unread is cut off (it reconnects with Last-Event-ID). */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

/** The session a channel path names, after the credential was checked against both its names. */
async function channelSession(deps: AppDeps, principal: Principal, ref: string, action: "read" | "write"): Promise<SessionRow | null> {
  const env = environmentOf(principal);
  const session = await findSession(deps.engine.db, env.id, ref);
  requireSessionAccess(principal, action, ref, session);
  return session;
}

/**
 * Checks the credential may write to the session a path names, looking the session up only when
 * it has to: a secret key may, and so may a token scoped to the name in the path; a token scoped
 * to the session's other name needs the row to tell, once: a session's id and externalId never
 * change, and `names` remembers them.
 */
async function authorizeWrite(deps: AppDeps, names: SessionNames, principal: Principal, ref: string): Promise<void> {
  if (hasSessionAccess(principal, "write", ref, null)) return;
  const env = environmentOf(principal);
  const externalId = ref.startsWith(SESSION_ID_PREFIX) ? names.externalIdOf(env.id, ref) : undefined;
  if (externalId !== undefined && hasSessionAccess(principal, "write", ref, { id: ref, external_id: externalId })) return;
  const session = await channelSession(deps, principal, ref, "write");
  if (session) names.remember(env.id, session);
}

/** Any value; `1` or `true` peeks. */
const PeekSettled = z.string();

export function registerSessionChannelRoutes(app: FastifyInstance, deps: AppDeps) {
  const names = new SessionNames();
  const subscriptions = limitsOf(app).subscriptions;
  defineRoute(app, deps, {
    method: "GET",
    url: "/realtime/v1/sessions/:session/:io",
    operation: "sessions.subscribe",
    summary: "Subscribe to a session channel (SSE, `event: batch` records; Last-Event-ID resumes after a sequence number)",
    tags: ["sessions"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: ChannelParams,
    // Too many subscriptions open for this public token or client address (subscription-limits.ts).
    errors: [429],
    responseMediaType: "text/event-stream",
    successDescription:
      "An event stream until Timeout-Seconds pass: `event: batch` events whose data is `{\"records\":[{\"seq_num\",\"timestamp\",\"headers\",\"body\"}]}` (a data record's body is the JSON text `{\"data\",\"id\"}`; a control record's is empty, its headers name it), and comment lines as heartbeats",
    successHeaders: {
      "X-Stream-Version": { description: "`v2`: the batch format above", required: true, schema: { type: "string", const: "v2" } },
      "X-Session-Settled": { description: "`true` when X-Peek-Settled found the turn complete: the stream ends at once", required: false, schema: { type: "string" } },
    },
    documentedHeaders: [
      { name: "Last-Event-ID", schema: SeqNumber, description: "Resume after this record sequence number (the last `seq_num` received)" },
      { name: "Timeout-Seconds", schema: TimeoutSeconds, description: `How long the long poll stays open, 1 to 600 seconds (default ${DEFAULT_STREAM_TIMEOUT_SECONDS})` },
      { name: "X-Peek-Settled", schema: PeekSettled, description: "`1`: when the last `.out` record is a turn-complete control record, send what follows Last-Event-ID and end at once" },
    ],
    async handler({ principal, params, request, reply }) {
      const env = environmentOf(principal);
      const session = await channelSession(deps, principal, params.session, "read");
      if (!session && params.session.startsWith(SESSION_ID_PREFIX)) throw new NotFoundError("Session not found");
      const timeoutSeconds = parseHeader(TimeoutSeconds, requestHeader(request, "timeout-seconds"), "Timeout-Seconds") ?? DEFAULT_STREAM_TIMEOUT_SECONDS;
      const afterSeq = Number(parseHeader(SeqNumber, requestHeader(request, "last-event-id"), "Last-Event-ID") ?? "0");
      const peekSettled = ["1", "true"].includes(requestHeader(request, "x-peek-settled") ?? "");
      const hub = deps.sessionStreams;
      if (!hub) throw new Error("session streams are not running in this process");
      const last = peekSettled && session ? await lastRecord(deps.engine.db, session.id, "out") : null;
      const settled = last !== null && isControl(last, "turn-complete");
      // Public tokens hold a bounded number of open streams (a settled peek ends at once: not counted).
      const refused = settled ? null : holdStreamSubscription(subscriptions, principal, request, reply);
      if (refused) return refused;
      const raw = reply.raw;
      openEventStream(reply, settled ? { "x-session-settled": "true" } : {});
      if (settled) {
        // Nothing more is coming this turn: what is there after the cursor, then the end.
        const rows = await readRecords(deps.engine.db, session!.id, params.io, afterSeq);
        if (rows.length > 0) raw.write(batchFrame(rows.map(sseRecordJson).join(","), Number(rows[rows.length - 1]!.seq)));
        raw.end();
        return reply;
      }
      const unsubscribe = hub.subscribe({
        environmentId: env.id,
        streamKey: session ? streamKey(session) : params.session,
        sessionId: session?.id ?? null,
        io: params.io,
        afterSeq,
        sink: {
          write: (frame) => {
            raw.write(frame);
            return raw.writableLength <= MAX_BUFFERED_BYTES;
          },
          end: () => raw.end(),
        },
      });
      const heartbeat = setInterval(() => raw.write(HEARTBEAT_FRAME), HEARTBEAT_MS);
      const timeout = setTimeout(() => raw.end(), timeoutSeconds * 1000);
      raw.once("close", () => {
        clearInterval(heartbeat);
        clearTimeout(timeout);
        unsubscribe();
      });
      return reply;
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/realtime/v1/sessions/:session/:io/records",
    operation: "sessions.readRecords",
    summary: `Read a channel's records after afterEventId at once (at most ${MAX_RECORDS_PER_READ}; ask again after the last seqNum)`,
    tags: ["sessions"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: ChannelParams,
    query: z.object({ afterEventId: SeqNumber.optional() }),
    response: SessionRecordsResponse,
    async handler({ principal, params, query, reply }) {
      const session = await channelSession(deps, principal, params.session, "read");
      if (!session) throw new NotFoundError("Session not found");
      const rows = await readRecords(deps.engine.db, session.id, params.io, query.afterEventId ?? "0");
      // Built as text: records are JSON already, and may be large.
      return reply.type("application/json").send(`{"records":[${rows.map(drainRecordJson).join(",")}]}`);
    },
  });

  // The append body is the record as sent, whatever its Content-Type: its own parser scope.
  app.register(async (rawBodies) => {
    rawBodies.removeAllContentTypeParsers();
    rawBodies.addContentTypeParser("*", { parseAs: "string", bodyLimit: MAX_SESSION_RECORD_BYTES }, (_request, body, done) => done(null, String(body)));
    defineRoute(rawBodies, deps, {
      method: "POST",
      url: "/realtime/v1/sessions/:session/:io/append",
      operation: "sessions.append",
      summary: "Append a record (the raw body, ≤ 1 MiB) to a channel; X-Part-Id makes it idempotent. `.out` needs a secret key.",
      tags: ["sessions"],
      auth: { allow: ["secretKey", "publicJwt"] },
      params: ChannelParams,
      bodyLimit: MAX_SESSION_RECORD_BYTES,
      documentedBody: {
        mediaType: "*/*",
        required: true,
        // Text, not bytes: the stored-text rule holds (no NUL), as on every other field.
        schema: storedText(z.string().min(1)),
        description: "The record, as UTF-8 text without NUL characters, of any Content-Type (the SDK sends JSON); stored as a JSON string",
      },
      response: AppendRecordResponse,
      async handler({ principal, params, request }) {
        const env = environmentOf(principal);
        await authorizeWrite(deps, names, principal, params.session);
        if (params.io === "out") requireSecretKeyForOut(principal);
        const partId = parseHeader(PartId, requestHeader(request, "x-part-id"), "X-Part-Id");
        const text = typeof request.body === "string" ? request.body : "";
        if (text.length === 0) throw new ValidationError("Request body is empty: the body is the record");
        const unstorable = unstorableReason(text);
        if (unstorable !== null) throw new ValidationError(`Invalid request body: the record ${unstorable}`);
        const result = await appendRecord(deps.engine, env, params.session, { io: params.io, data: JSON.stringify(text), ...(partId ? { partId } : {}) });
        // An `.in` record to a session without a live run starts one.
        if (result.runStarted) deps.metrics?.runsTriggered.inc();
        return { ok: true as const, seq: result.seq };
      },
    });
  });
}

