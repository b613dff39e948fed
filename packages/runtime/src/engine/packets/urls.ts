import { createHmac, timingSafeEqual } from "node:crypto";
import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import { getPacket, type PacketRow } from "./store.ts";

/** The unauthenticated URL that accepts the bytes of a packet (PUT). */
export function packetUploadUrl(apiUrl: string, uploadToken: string): string {
  return `${apiUrl.replace(/\/+$/, "")}/api/v1/packets/upload/${uploadToken}`;
}

function signature(uploadToken: string, environmentId: string, path: string): string {
  return createHmac("sha256", uploadToken).update(`${environmentId}\n${path}`).digest("base64url");
}

/**
 * A read-only capability for one packet: `<base64url([envId, path])>.<HMAC keyed by the upload
 * token>`. It cannot be used to upload, and presigning a new upload invalidates it.
 */
export function packetDownloadToken(packet: Pick<PacketRow, "environment_id" | "path" | "upload_token">): string {
  const subject = Buffer.from(JSON.stringify([packet.environment_id, packet.path])).toString("base64url");
  return `${subject}.${signature(packet.upload_token, packet.environment_id, packet.path)}`;
}

/** The unauthenticated URL that returns a packet's bytes (GET). */
export function packetDownloadUrl(apiUrl: string, packet: Pick<PacketRow, "environment_id" | "path" | "upload_token">): string {
  return `${apiUrl.replace(/\/+$/, "")}/api/v1/packets/download/${packetDownloadToken(packet)}`;
}

/** The uploaded packet a download token stands for; NotFoundError for anything else. */
export async function packetForDownloadToken(db: Queryable, token: string): Promise<PacketRow & { data: Buffer }> {
  const notFound = new NotFoundError("Packet not found");
  const [subject, sig] = token.split(".");
  if (!subject || !sig) throw notFound;
  let environmentId: unknown;
  let path: unknown;
  try {
    [environmentId, path] = JSON.parse(Buffer.from(subject, "base64url").toString("utf8")) as unknown[];
  } catch {
    throw notFound;
  }
  if (typeof environmentId !== "string" || typeof path !== "string") throw notFound;
  const packet = await getPacket(db, environmentId, path);
  if (!packet || packet.data === null) throw notFound;
  const expected = Buffer.from(signature(packet.upload_token, environmentId, path));
  const given = Buffer.from(sig);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw notFound;
  return packet as PacketRow & { data: Buffer };
}
