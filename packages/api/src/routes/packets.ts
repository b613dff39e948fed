import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import {
  assertUploadTokenUsable,
  getPacket,
  MAX_PACKET_PATH_LENGTH,
  NotFoundError,
  PACKET_PATH_PATTERN,
  packetDownloadUrl,
  packetForDownloadToken,
  packetUploadUrl,
  presignPacketUpload,
  storePacketUpload,
  validatePacketPath,
  ValidationError,
} from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";
import { sendError } from "../http/errors.ts";
import { limitsOf } from "../http/limits.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { refuseOtherMethods } from "../http/method-not-allowed.ts";
import { defineRoute } from "../http/route.ts";

/** Largest packet accepted by the upload URL. */
export const PACKET_BODY_LIMIT = 64 * 1024 * 1024;

/** `{file}` may arrive as one %2F-encoded segment (what the SDK sends) or as several segments. */
const FileParams = z.object({ "*": z.string().min(1, "file: the packet path is empty").meta({ pattern: PACKET_PATH_PATTERN, maxLength: MAX_PACKET_PATH_LENGTH }) });
const TokenParams = z.object({ token: z.string().min(1).max(512).regex(/^[A-Za-z0-9._-]+$/, "not a packet URL token") });

/**
 * Downloads are served with the uploaded type only when it is one the SDK reads and no browser
 * renders as a page; anything else (text/html, image/svg+xml, …) as bytes. With nosniff, an
 * attachment disposition and a sandboxing CSP, nothing uploaded can run in the API's origin.
 */
const SERVED_AS_UPLOADED = new Set(["application/json", "application/super+json", "text/plain", "application/octet-stream"]);
const DOWNLOAD_HEADERS = {
  "x-content-type-options": "nosniff",
  "content-disposition": "attachment",
  "content-security-policy": "default-src 'none'; sandbox",
};

/** Reads exactly `length` bytes into one buffer (no chunk list, no concatenation copy). */
function readBody(payload: Readable, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const body = Buffer.allocUnsafe(length);
    let at = 0;
    payload.on("data", (chunk: Buffer) => {
      if (at + chunk.length > length) return reject(new ValidationError(`Request body is longer than its Content-Length (${length})`));
      chunk.copy(body, at);
      at += chunk.length;
    });
    payload.on("end", () => (at === length ? resolve(body) : reject(new ValidationError(`Request body ended after ${at} of ${length} bytes`))));
    payload.on("error", reject);
  });
}

/**
 * Large payloads (the SDK offloads 128 KiB or more): presign an upload URL, PUT the bytes there
 * without credentials, then trigger with `payloadType: "application/store"` and the storagePath.
 */
export function registerPacketRoutes(app: FastifyInstance, deps: AppDeps) {
  defineRoute(app, deps, {
    method: "PUT",
    url: "/api/v2/packets/*",
    operation: "packets.createUploadUrl",
    summary: "Get an upload URL for a large payload or output (the SDK calls this for payloads of 128 KiB or more)",
    tags: ["packets"],
    auth: { allow: ["secretKey"] },
    params: FileParams,
    response: z.object({ presignedUrl: z.string(), storagePath: z.string() }),
    async handler({ principal, params }) {
      const env = environmentOf(principal);
      const path = validatePacketPath(params["*"]);
      const token = await presignPacketUpload(deps.engine.db, env.id, path, deps.engine.clock.now());
      return { presignedUrl: packetUploadUrl(deps.engine.apiUrl, token), storagePath: path };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/packets/*",
    operation: "packets.createDownloadUrl",
    summary: "Get a download URL for a stored packet",
    tags: ["packets"],
    auth: { allow: ["secretKey"] },
    params: FileParams,
    response: z.object({ presignedUrl: z.string() }),
    async handler({ principal, params }) {
      const env = environmentOf(principal);
      const packet = await getPacket(deps.engine.db, env.id, validatePacketPath(params["*"]));
      if (!packet) throw new NotFoundError("Packet not found");
      return { presignedUrl: packetDownloadUrl(deps.engine.apiUrl, packet, deps.engine.clock.now()) };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/packets/download/:token",
    operation: "packets.download",
    responseMediaType: "*/*",
    summary: "Download a packet's bytes (the URL is the credential, for an hour)",
    tags: ["packets"],
    params: TokenParams,
    async handler({ params, reply }) {
      const packet = await packetForDownloadToken(deps.engine.db, params.token, deps.engine.clock.now());
      const type = SERVED_AS_UPLOADED.has(packet.content_type) ? packet.content_type : "application/octet-stream";
      return reply.headers(DOWNLOAD_HEADERS).header("content-type", type).send(packet.data);
    },
  });

  // An upload URL only takes PUT: GET there is 405, not a download-URL request for a packet named `upload/…`.
  refuseOtherMethods(app, "/api/v1/packets/upload/:token", ["PUT"]);

  // The upload URL takes the bytes as they are, whatever their Content-Type: its own parser scope.
  // It needs no credential, so nothing is read before the URL's token has been checked and the
  // declared length reserved from the app's upload budget (given back when the response is done).
  app.register(async (raw) => {
    const budget = limitsOf(raw).packetUploads;
    const reserved = new WeakMap<FastifyRequest, number>();
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser("*", (request, payload, done) => {
      readBody(payload, reserved.get(request) ?? 0).then((body) => done(null, body), (error: Error) => done(error, undefined));
    });
    defineRoute(raw, deps, {
      method: "PUT",
      url: "/api/v1/packets/upload/:token",
      operation: "packets.upload",
      errors: [409, 411],
      documentedBody: { mediaType: "*/*", required: false, description: "The packet's bytes, of any Content-Type (kept and served back with them), with a Content-Length" },
      summary: "Upload a packet's bytes to a presigned URL (the URL is the credential, for one upload within an hour)",
      tags: ["packets"],
      params: TokenParams,
      async beforeBody(request: FastifyRequest, reply: FastifyReply) {
        const params = TokenParams.safeParse(request.params);
        if (!params.success) return void sendError(reply, 400, "Invalid path parameters: token: not a packet URL token");
        const declared = request.headers["content-length"];
        const length = declared === undefined ? NaN : Number(declared);
        if (!Number.isSafeInteger(length) || length < 0) return void sendError(reply, 411, "Content-Length required: send the packet's length (at most 64 MiB)");
        if (length > PACKET_BODY_LIMIT) return void sendError(reply, 413, `Request body too large: packets are at most ${PACKET_BODY_LIMIT} bytes`);
        await assertUploadTokenUsable(deps.engine.db, params.data.token, deps.engine.clock.now());
        if (length > budget.capacity) return void sendError(reply, 413, `Request body too large: this server buffers at most ${budget.capacity} bytes of uploads`);
        if (!budget.tryTake(length)) {
          reply.header("retry-after", "1");
          return void sendError(reply, 429, "Too many packet uploads in progress: retry shortly");
        }
        reserved.set(request, length);
        reply.raw.once("close", () => budget.give(length));
      },
      response: z.object({ ok: z.literal(true) }),
      async handler({ params, request }) {
        const body = request.body;
        const data = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
        const contentType = String(request.headers["content-type"] ?? "application/octet-stream").split(";")[0]!.trim() || "application/octet-stream";
        await storePacketUpload(deps.engine.db, params.token, contentType, data, deps.engine.clock.now());
        return { ok: true };
      },
    });
  });
}
