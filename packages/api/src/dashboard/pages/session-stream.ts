import type { FastifyInstance, FastifyReply } from "fastify";
import { NotFoundError, readRecords, sessionStatus, sseRecordJson, streamKey, ValidationError, type SessionRow } from "@svc/runtime/engine";
import type { AppDeps } from "../../deps.ts";
import { batchFrame, HEARTBEAT_FRAME } from "../../realtime/sse.ts";
import { resolveScope } from "../scope.ts";
import { sessionOfPath } from "./session.ts";
import { RECORDS_SHOWN } from "./session-records.ts";

/** How often an idle stream sends a comment line (proxies close silent connections). */
const HEARTBEAT_MS = 15_000;
/**
 * A stream ends after this long and the browser's EventSource reconnects by itself (Last-Event-ID):
 * each reconnection passes the sign-in check again, so a signed-out or revoked session stops streaming.
 */
const STREAM_SECONDS = 300;
/** How long the browser waits before reconnecting. */
const RETRY_MS = 2000;
/** A page that lets this much pile up unread is cut off; it reconnects and catches up from its cursor. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

const IO = ["in", "out"] as const;
type Io = (typeof IO)[number];
/** The last sequence number the page has of each channel. */
type Cursor = Record<Io, number>;

const SEQ = /^\d{1,15}$/;

/**
 * Where the stream starts: the browser's Last-Event-ID (`<in>.<out>`, sent when it reconnects),
 * else the `in` and `out` the page was rendered with. Never further back than the page shows: a
 * page away for long catches up on its last RECORDS_SHOWN records, not on everything since.
 */
function startCursor(lastEventId: string | undefined, query: Record<string, unknown>, session: SessionRow): Cursor {
  let cursor: Cursor;
  if (lastEventId !== undefined && lastEventId !== "") {
    const match = /^(\d{1,15})\.(\d{1,15})$/.exec(lastEventId);
    if (!match) throw new ValidationError("Last-Event-ID: must be <in seq>.<out seq>");
    cursor = { in: Number(match[1]), out: Number(match[2]) };
  } else {
    const at = (io: Io) => {
      const value = query[io] ?? "0";
      if (typeof value !== "string" || !SEQ.test(value)) throw new ValidationError(`${io}: must be a record sequence number`);
      return Number(value);
    };
    cursor = { in: at("in"), out: at("out") };
  }
  return {
    in: Math.max(cursor.in, Number(session.in_seq) - RECORDS_SHOWN),
    out: Math.max(cursor.out, Number(session.out_seq) - RECORDS_SHOWN),
  };
}

/**
 * The hub's frames are one channel's (`event: batch`, `id: <seq>`). The page's stream carries both
 * channels on one connection (a browser allows few per origin), so each frame is relabelled
 * `event: in|out` with the id `<in seq>.<out seq>` that resumes both on reconnection.
 */
function relabel(frame: string, io: Io, cursor: Cursor): string {
  const dataAt = frame.indexOf("\ndata: ");
  const seq = /\nid: (\d+)$/.exec(frame.slice(0, dataAt))?.[1];
  if (seq !== undefined) cursor[io] = Number(seq);
  return `event: ${io}\nid: ${cursor.in}.${cursor.out}${frame.slice(dataAt)}`;
}

function openEventStream(reply: FastifyReply): void {
  const headers: Record<string, string | number | string[]> = {};
  // The dashboard's security headers, set before the handler ran.
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value as string | number | string[];
  reply.hijack();
  reply.raw.writeHead(200, { ...headers, "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store, no-transform", "x-accel-buffering": "no" });
  reply.raw.write(`retry: ${RETRY_MS}\n\n`);
}

/**
 * GET /dashboard/{ref}/{env}/sessions/{session}/stream: the session page's live records, for the
 * signed-in browser (its cookie, like every page): both channels' records after the cursor, then
 * each new one as it is appended, through the process's SessionStreamHub (its one LISTEN
 * connection). Ends when the browser goes away, after STREAM_SECONDS, or at once with `event: end`
 * once the session is no longer active (nothing more can be appended), which the script obeys.
 */
export function registerSessionRecordStream(dash: FastifyInstance, deps: AppDeps) {
  dash.get("/:projectRef/:env/sessions/:session/stream", async (request, reply) => {
    const params = request.params as { projectRef: string; env: string; session: string };
    const query = (request.query ?? {}) as Record<string, unknown>;
    const signedIn = request.dashboardSession;
    if (!signedIn) throw new Error("dashboard stream reached without a session");
    const hub = deps.sessionStreams;
    if (!hub) throw new NotFoundError("Live records are not served by this process");
    const scope = await resolveScope(deps.engine.db, signedIn, params.projectRef, params.env, typeof query.branch === "string" ? query.branch : undefined);
    const session = await sessionOfPath(deps, scope, params.session);
    const lastEventId = request.headers["last-event-id"];
    const cursor = startCursor(Array.isArray(lastEventId) ? lastEventId[0] : lastEventId, query, session);
    const raw = reply.raw;

    if (sessionStatus(session, deps.engine.clock.now()) !== "ACTIVE") {
      // Nothing more can be appended: what the page lacks (at most RECORDS_SHOWN a channel), then the end.
      const unread = await Promise.all(IO.map((io) => readRecords(deps.engine.db, session.id, io, cursor[io], RECORDS_SHOWN)));
      openEventStream(reply);
      IO.forEach((io, i) => {
        const rows = unread[i]!;
        if (rows.length > 0) raw.write(relabel(batchFrame(rows.map(sseRecordJson).join(","), Number(rows[rows.length - 1]!.seq)), io, cursor));
      });
      raw.end("event: end\ndata: inactive\n\n");
      return reply;
    }

    openEventStream(reply);
    let finished = false;
    const unsubscribes: (() => void)[] = [];
    const heartbeat = setInterval(() => {
      if (!finished) raw.write(HEARTBEAT_FRAME);
    }, HEARTBEAT_MS);
    const finish = () => {
      if (finished) return;
      finished = true;
      clearInterval(heartbeat);
      clearTimeout(timeout);
      for (const unsubscribe of unsubscribes) unsubscribe();
      if (!raw.writableEnded) raw.end();
    };
    const timeout = setTimeout(finish, STREAM_SECONDS * 1000);
    for (const io of IO) {
      unsubscribes.push(
        hub.subscribe({
          environmentId: scope.environment.id,
          streamKey: streamKey(session),
          sessionId: session.id,
          io,
          afterSeq: cursor[io],
          sink: {
            write: (frame) => {
              if (finished) return false;
              raw.write(relabel(frame, io, cursor));
              return raw.writableLength <= MAX_BUFFERED_BYTES;
            },
            end: finish,
          },
        }),
      );
    }
    raw.once("close", finish);
    // A browser gone while the session was looked up: its "close" has already passed.
    if (request.raw.socket.destroyed) finish();
    return reply;
  });
}
