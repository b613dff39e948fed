import { createHmac, timingSafeEqual } from "node:crypto";
import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import { getPacket, type PacketRow } from "./store.ts";

/** The unauthenticated URL that accepts the bytes of a packet (PUT). */
export function packetUploadUrl(apiUrl: string, uploadToken: string): string {
  return `${apiUrl.replace(/\/+$/, "")}/api/v1/packets/upload/${uploadToken}`;
}

/** How long a download URL works after it was handed out. */
export const PACKET_DOWNLOAD_URL_SECONDS = 3600;

type Signed = Pick<PacketRow, "environment_id" | "path" | "upload_token">;

function signature(uploadToken: string, environmentId: string, path: string, expiresAt: number): string {
  return createHmac("sha256", uploadToken).update(`${environmentId}\n${path}\n${expiresAt}`).digest("base64url");
}

/**
 * A read-only capability for one packet until `expiresAt` (Unix seconds):
 * `<base64url([envId, path, expiresAt])>.<HMAC keyed by the upload token>`. It cannot be used to
 * upload, and presigning a new upload invalidates it.
 */
export function packetDownloadToken(packet: Signed, expiresAt: number): string {
  const subject = Buffer.from(JSON.stringify([packet.environment_id, packet.path, expiresAt])).toString("base64url");
  return `${subject}.${signature(packet.upload_token, packet.environment_id, packet.path, expiresAt)}`;
}

/** The unauthenticated URL that returns a packet's bytes (GET), for PACKET_DOWNLOAD_URL_SECONDS from `now`. */
export function packetDownloadUrl(apiUrl: string, packet: Signed, now: Date): string {
  const expiresAt = Math.floor(now.getTime() / 1000) + PACKET_DOWNLOAD_URL_SECONDS;
  return `${apiUrl.replace(/\/+$/, "")}/api/v1/packets/download/${packetDownloadToken(packet, expiresAt)}`;
}

/** The uploaded packet a download token stands for; NotFoundError for anything else, or once it expired. */
export async function packetForDownloadToken(db: Queryable, token: string, now: Date): Promise<PacketRow & { data: Buffer }> {
  const notFound = new NotFoundError("Packet not found");
  const [subject, sig] = token.split(".");
  if (!subject || !sig) throw notFound;
  let environmentId: unknown;
  let path: unknown;
  let expiresAt: unknown;
  try {
    [environmentId, path, expiresAt] = JSON.parse(Buffer.from(subject, "base64url").toString("utf8")) as unknown[];
  } catch {
    throw notFound;
  }
  if (typeof environmentId !== "string" || typeof path !== "string" || !Number.isSafeInteger(expiresAt)) throw notFound;
  const packet = await getPacket(db, environmentId, path);
  if (!packet || packet.data === null) throw notFound;
  const expected = Buffer.from(signature(packet.upload_token, environmentId, path, expiresAt as number));
  const given = Buffer.from(sig);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw notFound;
  if ((expiresAt as number) * 1000 <= now.getTime()) throw new NotFoundError(`Download URL expired (download URLs are valid for ${PACKET_DOWNLOAD_URL_SECONDS} s): ask for a new one`);
  return packet as PacketRow & { data: Buffer };
}
