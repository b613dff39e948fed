import { z } from "zod";
import { CreateWaitpointTokenRequestBody } from "./waitpoints.ts";

/** A stream key: what `streams.pipe(key, …)` and the URLs name (no slash: it is one path segment). */
export const STREAM_KEY_PATTERN = /^[A-Za-z0-9_.:$-]{1,128}$/;

/** A stream key: one path segment of letters, digits and `_ . : $ -`, up to 128 characters. */
export const StreamKey = z.string().regex(STREAM_KEY_PATTERN, "must be 1–128 letters, digits or _ . : $ - (no slash)");

/** Which run a stream write goes to: the run itself, its parent, or the root of its tree (the run itself when it has none). */
export const StreamTarget = z.enum(["self", "parent", "root"]);
export type StreamTarget = z.infer<typeof StreamTarget>;

const RunId = z.string().min(1).max(256).regex(/^[\x21-\x7e]+$/, "must be a run id");

export const StreamReadParams = z.object({ runId: RunId, streamKey: StreamKey });
export const StreamWriteParams = z.object({ runId: RunId, target: StreamTarget, streamKey: StreamKey });
export const InputStreamParams = z.object({ runId: RunId, streamKey: StreamKey });

/** PUT …/{target}/{key}: the stream exists (listed in the run's realtimeStreams); `version` as Trigger.dev answers it. */
export const CreateStreamResponse = z.object({ version: z.string() });
/** POST …/append and POST …/input/{key}: stored. `seq` is the chunk's sequence number (svc's addition). */
export const AppendToStreamResponse = z.object({ ok: z.literal(true), seq: z.number().int() });

/** Body of POST /realtime/v1/streams/{run}/input/{key} (the SDK's `streams.input().send`): the value. */
export const SendInputStreamBody = z.object({ data: z.unknown() });

/** Body of POST /api/v1/runs/{run}/input-streams/wait: a token that completes with the run's next input chunk. */
export const CreateInputStreamWaitpointBody = CreateWaitpointTokenRequestBody.extend({
  streamId: StreamKey,
  /** Wait for a chunk after this sequence number (default: from the first chunk of the stream). */
  lastSeqNum: z.number().int().min(0).optional(),
});
export const CreateInputStreamWaitpointResponse = z.object({ waitpointId: z.string(), isCached: z.boolean() });
