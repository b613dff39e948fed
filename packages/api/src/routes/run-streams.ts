import type { FastifyInstance } from "fastify";
import { z } from "zod";
import {
  appendStreamChunks,
  createInputStreamWaitpoint,
  FINAL_STATUSES,
  lastStreamSeq,
  MAX_STREAM_CHUNK_BYTES,
  NotFoundError,
  PermissionError,
  TooLargeError,
  ValidationError,
  type Queryable,
} from "@svc/runtime/engine";
import {
  AppendToStreamResponse,
  CreateInputStreamWaitpointBody,
  CreateInputStreamWaitpointResponse,
  CreateStreamResponse,
  InputStreamParams,
  RunIdParams,
  SendInputStreamBody,
  storedText,
  StreamReadParams,
  StreamWriteParams,
  unstorableReason,
  type StreamTarget,
} from "@svc/runtime/contracts";
import type { Principal } from "../auth/principal.ts";
import { requireRunRead } from "../auth/run-access.ts";
import { requireScope } from "../auth/scopes.ts";
import type { AppDeps } from "../deps.ts";
import { limitsOf } from "../http/limits.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";
import { HEARTBEAT_FRAME } from "../realtime/sse.ts";
import { holdStreamSubscription, openEventStream, parseHeader, requestHeader, TimeoutSeconds } from "../realtime/event-stream.ts";

const SeqNumber = z.string().regex(/^[0-9]{1,15}$/, "must be a chunk sequence number (digits)");
const StreamStart = z.enum(["latest", "beginning"]);
/** How long a stream stays open without a new chunk unless Timeout-Seconds says otherwise (Trigger.dev's streams.read default). */
export const DEFAULT_STREAM_IDLE_SECONDS = 60;
const HEARTBEAT_MS = 15_000;
/** A subscriber that lets this much pile up unread is cut off (it reconnects with Last-Event-ID). */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** How often an open stream looks whether its run finished, when this process has no run-change hub. */
const RUN_END_POLL_MS = 2_000;

/** The run a write's target names: the run itself, its parent or its root (the run itself when it has none). */
async function targetRun(db: Queryable, environmentId: string, runId: string, target: StreamTarget): Promise<string> {
  const { rows } = await db.query<{ parent_run_id: string | null; root_run_id: string | null }>(
    `SELECT parent_run_id, root_run_id FROM runs WHERE id = $1 AND environment_id = $2`,
    [runId, environmentId],
  );
  const run = rows[0];
  if (!run) throw new NotFoundError("Run not found");
  if (target === "parent") return run.parent_run_id ?? runId;
  if (target === "root") return run.root_run_id ?? runId;
  return runId;
}

async function runStatus(db: Queryable, environmentId: string, runId: string): Promise<string | null> {
  const { rows } = await db.query<{ status: string }>(`SELECT status FROM runs WHERE id = $1 AND environment_id = $2`, [runId, environmentId]);
  return rows[0]?.status ?? null;
}

/** A chunk's JSON text, checked against the per-chunk cap (413). */
function chunkText(value: unknown): string {
  const text = JSON.stringify(value ?? null);
  if (Buffer.byteLength(text) > MAX_STREAM_CHUNK_BYTES) throw new TooLargeError(`A stream chunk is at most ${MAX_STREAM_CHUNK_BYTES} bytes`);
  return text;
}

/**
 * A run's realtime streams (what its code writes with `streams.pipe/append`, read by
 * `streams.read`, `runs.subscribeToRun().withStreams()` and useRealtimeRunWithStreams) and input
 * streams (`streams.input().send`, which the run reads with `.wait()`, `.once()` and `.on()`).
 */
export function registerRunStreamRoutes(app: FastifyInstance, deps: AppDeps) {
  const subscriptions = limitsOf(app).subscriptions;
  defineRoute(app, deps, {
    method: "GET",
    url: "/realtime/v1/streams/:runId/:streamKey",
    operation: "streams.read",
    summary:
      "Read a run's realtime stream (SSE, `event: batch` records as session channels'; Last-Event-ID resumes after a chunk). Ends when the run has finished and every chunk was sent, or after Timeout-Seconds without a new chunk",
    tags: ["streams"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: StreamReadParams,
    errors: [429],
    responseMediaType: "text/event-stream",
    successDescription:
      "An event stream: `event: batch` events whose data is `{\"records\":[{\"seq_num\",\"timestamp\",\"headers\",\"body\"}]}` (body: the JSON text `{\"data\",\"id\"}`, data the chunk), and comment lines as heartbeats",
    successHeaders: { "X-Stream-Version": { description: "`v2`: the batch format above", required: true, schema: { type: "string", const: "v2" } } },
    documentedHeaders: [
      { name: "Last-Event-ID", schema: SeqNumber, description: "Resume after this chunk sequence number (the last `seq_num` received); chunks are numbered from 1" },
      { name: "Timeout-Seconds", schema: TimeoutSeconds, description: `How long the stream stays open without a new chunk, 1 to 600 seconds (default ${DEFAULT_STREAM_IDLE_SECONDS})` },
      { name: "X-Trigger-Stream-Start", schema: StreamStart, description: "`latest`: without Last-Event-ID, only the chunks appended from now on" },
    ],
    async handler({ principal, params, request, reply }) {
      const env = environmentOf(principal);
      const db = deps.engine.db;
      await requireRunRead(db, principal, env.id, params.runId);
      const status = await runStatus(db, env.id, params.runId);
      if (status === null) throw new NotFoundError("Run not found");
      const idleSeconds = parseHeader(TimeoutSeconds, requestHeader(request, "timeout-seconds"), "Timeout-Seconds") ?? DEFAULT_STREAM_IDLE_SECONDS;
      const lastEventId = parseHeader(SeqNumber, requestHeader(request, "last-event-id"), "Last-Event-ID");
      const start = parseHeader(StreamStart, requestHeader(request, "x-trigger-stream-start"), "X-Trigger-Stream-Start");
      const afterSeq = lastEventId !== undefined ? Number(lastEventId) : start === "latest" ? await lastStreamSeq(db, params.runId, "out", params.streamKey) : 0;
      const hub = deps.runStreams;
      if (!hub) throw new Error("run streams are not running in this process");
      const refused = holdStreamSubscription(subscriptions, principal, request, reply);
      if (refused) return refused;
      const raw = reply.raw;
      openEventStream(reply);
      let idle: NodeJS.Timeout | null = null;
      const armIdle = () => {
        if (idle) clearTimeout(idle);
        idle = setTimeout(() => raw.end(), idleSeconds * 1000);
      };
      armIdle();
      const subscription = hub.subscribe({
        environmentId: env.id,
        streamKey: `${params.runId}/${params.streamKey}`,
        sessionId: `${params.runId}/${params.streamKey}`,
        io: "out",
        afterSeq,
        sink: {
          write: (frame) => {
            raw.write(frame);
            armIdle();
            return raw.writableLength <= MAX_BUFFERED_BYTES;
          },
          end: () => raw.end(),
        },
      });
      const heartbeat = setInterval(() => raw.write(HEARTBEAT_FRAME), HEARTBEAT_MS);
      const closed = new AbortController();
      raw.once("close", () => {
        closed.abort();
        clearInterval(heartbeat);
        if (idle) clearTimeout(idle);
        subscription();
      });
      // A finished run's stream gets no more chunks from its code: what is there is sent, then the end.
      void untilRunFinished(deps, env.id, params.runId, closed.signal)
        .then((finished) => {
          if (finished) subscription.finish();
        })
        .catch((error: unknown) => request.log.error({ err: error }, "run stream: watching the run's end failed"));
      return reply;
    },
  });

  defineRoute(app, deps, {
    method: "PUT",
    url: "/realtime/v1/streams/:runId/:target/:streamKey",
    operation: "streams.create",
    summary: "Create a realtime stream of a run (self, its parent or its root): it is listed in the run's realtimeStreams. Chunks are added with …/append",
    tags: ["streams"],
    auth: { allow: ["secretKey"] },
    params: StreamWriteParams,
    errors: [413],
    response: CreateStreamResponse,
    async handler({ principal, params }) {
      const env = environmentOf(principal);
      const runId = await targetRun(deps.engine.db, env.id, params.runId, params.target);
      await appendStreamChunks(deps.engine, env.id, runId, "out", params.streamKey, []);
      return { version: "v1" };
    },
  });

  // The append body is the chunk as sent, whatever its Content-Type: its own parser scope.
  app.register(async (rawBodies) => {
    rawBodies.removeAllContentTypeParsers();
    rawBodies.addContentTypeParser("*", { parseAs: "string", bodyLimit: MAX_STREAM_CHUNK_BYTES }, (_request, body, done) => done(null, String(body)));
    defineRoute(rawBodies, deps, {
      method: "POST",
      url: "/realtime/v1/streams/:runId/:target/:streamKey/append",
      operation: "streams.append",
      summary: `Append a chunk (the raw body as a string, ≤ ${MAX_STREAM_CHUNK_BYTES / 1024} KiB) to a realtime stream of a run (self, its parent or its root)`,
      tags: ["streams"],
      auth: { allow: ["secretKey"] },
      params: StreamWriteParams,
      bodyLimit: MAX_STREAM_CHUNK_BYTES,
      errors: [413],
      documentedBody: {
        mediaType: "*/*",
        required: true,
        schema: storedText(z.string().min(1)),
        description: "The chunk, as UTF-8 text without NUL characters; readers get it as a string",
      },
      response: AppendToStreamResponse,
      async handler({ principal, params, request }) {
        const env = environmentOf(principal);
        const text = typeof request.body === "string" ? request.body : "";
        if (text.length === 0) throw new ValidationError("Request body is empty: the body is the chunk");
        const unstorable = unstorableReason(text);
        if (unstorable !== null) throw new ValidationError(`Invalid request body: the chunk ${unstorable}`);
        const runId = await targetRun(deps.engine.db, env.id, params.runId, params.target);
        const [result] = (await appendStreamChunks(deps.engine, env.id, runId, "out", params.streamKey, [{ data: chunkText(text) }]))!;
        return { ok: true as const, seq: result!.seq };
      },
    });
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/realtime/v1/streams/:runId/input/:streamKey",
    operation: "streams.sendInput",
    summary:
      "Send a value to a run's input stream (`streams.input({ id }).send(runId, data)`): it completes the run's `.wait()` on it, or is read by `.once()`/`.on()`. A finished run is refused (422)",
    tags: ["streams"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: InputStreamParams,
    body: SendInputStreamBody,
    bodyLimit: MAX_STREAM_CHUNK_BYTES + 1024,
    errors: [413, 422],
    response: AppendToStreamResponse,
    async handler({ principal, params, body }) {
      const env = environmentOf(principal);
      requireInputWrite(principal, params.runId);
      const [result] = (await appendStreamChunks(deps.engine, env.id, params.runId, "in", params.streamKey, [{ data: chunkText(body.data) }]))!;
      return { ok: true as const, seq: result!.seq };
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/runs/:runId/input-streams/wait",
    operation: "runs.createInputStreamWaitpoint",
    summary:
      "Create a waitpoint token that completes with the run's next chunk on input stream `streamId` after `lastSeqNum` (from its first chunk without it), as `{ seq, data }`; token options as POST /api/v1/waitpoints/tokens",
    tags: ["streams"],
    auth: { allow: ["secretKey"] },
    params: RunIdParams,
    body: CreateInputStreamWaitpointBody,
    errors: [422],
    response: CreateInputStreamWaitpointResponse,
    async handler({ principal, params, body }) {
      const env = environmentOf(principal);
      return createInputStreamWaitpoint(deps.engine, env.id, params.runId, body);
    },
  });
}

/** A public token sends to a run's input streams with `write:inputStreams:<run>` (Trigger.dev's trigger tokens carry it). */
function requireInputWrite(principal: Principal, runId: string): void {
  if (principal.kind !== "publicJwt") return;
  try {
    requireScope(principal, [`write:inputStreams:${runId}`]);
  } catch (error) {
    if (error instanceof PermissionError) throw new PermissionError(`This token may not send to the input streams of ${runId} (it needs write:inputStreams:${runId})`);
    throw error;
  }
}

/**
 * Resolves true once the run is final (false when `signal` aborts first): woken by the run-change
 * hub when the process has one, else by looking every RUN_END_POLL_MS.
 */
async function untilRunFinished(deps: AppDeps, environmentId: string, runId: string, signal: AbortSignal): Promise<boolean> {
  const hub = deps.runChanges;
  const release = hub ? await hub.watches.hold(environmentId) : null;
  const changes = hub?.subscribe(environmentId, { kind: "run", runId });
  try {
    while (!signal.aborted) {
      const status = await runStatus(deps.engine.db, environmentId, runId);
      if (status === null || (FINAL_STATUSES as readonly string[]).includes(status)) return !signal.aborted;
      if (changes) await changes.wait(60_000, signal);
      else await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, RUN_END_POLL_MS);
        signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
    return false;
  } finally {
    changes?.close();
    release?.();
  }
}

