import type { FastifyInstance } from "fastify";
import { z } from "zod";
import {
  getPacket,
  NotFoundError,
  packetDownloadUrl,
  packetForDownloadToken,
  packetUploadUrl,
  presignPacketUpload,
  storePacketUpload,
  validatePacketPath,
} from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";

/** Largest packet accepted by the upload URL. */
export const PACKET_BODY_LIMIT = 64 * 1024 * 1024;

/** `{file}` may arrive as one %2F-encoded segment (what the SDK sends) or as several segments. */
const FileParams = z.object({ "*": z.string().min(1, "file: the packet path is empty") });
const TokenParams = z.object({ token: z.string().min(1).max(512).regex(/^[A-Za-z0-9._-]+$/, "not a packet URL token") });

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
      const token = await presignPacketUpload(deps.engine.db, env.id, path);
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
      return { presignedUrl: packetDownloadUrl(deps.engine.apiUrl, packet) };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/packets/download/:token",
    operation: "packets.download",
    responseMediaType: "*/*",
    errors: [429],
    summary: "Download a packet's bytes (the URL is the credential)",
    tags: ["packets"],
    params: TokenParams,
    async handler({ params, reply }) {
      const packet = await packetForDownloadToken(deps.engine.db, params.token);
      return reply.header("content-type", packet.content_type).send(packet.data);
    },
  });

  // The upload URL takes the bytes as they are, whatever their Content-Type: its own parser scope.
  app.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    defineRoute(raw, deps, {
      method: "PUT",
      url: "/api/v1/packets/upload/:token",
      operation: "packets.upload",
      errors: [429],
      documentedBody: { mediaType: "*/*", required: false, description: "The packet's bytes, of any Content-Type (kept and served back with them)" },
      summary: "Upload a packet's bytes to a presigned URL (the URL is the credential)",
      tags: ["packets"],
      params: TokenParams,
      bodyLimit: PACKET_BODY_LIMIT,
      response: z.object({ ok: z.literal(true) }),
      async handler({ params, request }) {
        const body = request.body;
        const data = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
        const contentType = String(request.headers["content-type"] ?? "application/octet-stream").split(";")[0]!.trim() || "application/octet-stream";
        await storePacketUpload(deps.engine.db, params.token, contentType, data);
        return { ok: true };
      },
    });
  });
}
