import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError, ValidationError } from "../../errors.ts";
import { randomId } from "../../ids.ts";

/**
 * Large payloads and outputs. The SDK offloads anything of 128 KiB or more: it asks for an upload
 * URL (PUT /api/v2/packets/{file}), PUTs the bytes there without credentials, then triggers with
 * `payloadType: "application/store"` and `payload: <storagePath>`.
 */
export interface PacketRow {
  environment_id: string;
  path: string;
  content_type: string;
  data: Buffer | null;
  upload_token: string;
  created_at: Date;
}

export const MAX_PACKET_PATH_LENGTH = 1024;

/** A storage path as the SDK names it (`trigger/packet_x/payload.json`), checked for safety. */
export function validatePacketPath(raw: string): string {
  const path = raw.trim();
  if (path.length === 0) throw new ValidationError("file: the packet path is empty");
  if (path.length > MAX_PACKET_PATH_LENGTH) throw new ValidationError(`file: the packet path is longer than ${MAX_PACKET_PATH_LENGTH} characters`);
  if (path.startsWith("/")) throw new ValidationError("file: the packet path must be relative (no leading /)");
  if (path.split("/").some((segment) => segment === ".." || segment === ".")) throw new ValidationError("file: the packet path must not contain . or .. segments");
  if (/[\u0000-\u001f\u007f]/.test(path)) throw new ValidationError("file: the packet path contains control characters");
  return path;
}

/**
 * Reserves `path` in the environment and returns a fresh upload token. The token starts with the
 * environment id, so the unauthenticated upload finds its row through the primary key.
 * Presigning the same path again replaces the token (the old upload URL stops working).
 */
export async function presignPacketUpload(db: Queryable, environmentId: string, path: string): Promise<string> {
  const token = `${environmentId}.${randomId(40)}`;
  const { rows } = await db.query<{ upload_token: string }>(
    `INSERT INTO packets (environment_id, path, content_type, data, upload_token)
     VALUES ($1, $2, 'application/octet-stream', NULL, $3)
     ON CONFLICT (environment_id, path) DO UPDATE SET upload_token = EXCLUDED.upload_token
     RETURNING upload_token`,
    [environmentId, path, token],
  );
  return rows[0]!.upload_token;
}

function environmentOfToken(token: string): string | null {
  const dot = token.indexOf(".");
  return dot > 0 ? token.slice(0, dot) : null;
}

/** Stores the uploaded bytes for an upload token; NotFoundError when the token is unknown. */
export async function storePacketUpload(db: Queryable, token: string, contentType: string, data: Buffer): Promise<{ environmentId: string; path: string }> {
  const environmentId = environmentOfToken(token);
  const { rows } = environmentId
    ? await db.query<{ environment_id: string; path: string }>(
        `UPDATE packets SET data = $3, content_type = $4
         WHERE environment_id = $1 AND upload_token = $2 RETURNING environment_id, path`,
        [environmentId, token, data, contentType],
      )
    : { rows: [] };
  const row = rows[0];
  if (!row) throw new NotFoundError("Upload URL not found or replaced by a newer one");
  return { environmentId: row.environment_id, path: row.path };
}

export async function getPacket(db: Queryable, environmentId: string, path: string): Promise<PacketRow | null> {
  const { rows } = await db.query<PacketRow>(`SELECT * FROM packets WHERE environment_id = $1 AND path = $2`, [environmentId, path]);
  return rows[0] ?? null;
}

/** Size of an uploaded packet in bytes, or null when it was never uploaded. */
export async function packetSize(db: Queryable, environmentId: string, path: string): Promise<number | null> {
  const { rows } = await db.query<{ size: number | null }>(
    `SELECT octet_length(data) AS size FROM packets WHERE environment_id = $1 AND path = $2`,
    [environmentId, path],
  );
  return rows[0]?.size ?? null;
}

/** Trigger-time check for `application/store` payloads: the packet must exist and hold its bytes. */
export async function assertPacketUploaded(db: Queryable, environmentId: string, path: string): Promise<void> {
  const { rows } = await db.query<{ uploaded: boolean }>(
    `SELECT data IS NOT NULL AS uploaded FROM packets WHERE environment_id = $1 AND path = $2`,
    [environmentId, path],
  );
  if (!rows[0]) throw new ValidationError(`payload: packet "${path}" not found; get an upload URL with PUT /api/v2/packets/{file} first`);
  if (!rows[0].uploaded) throw new ValidationError(`payload: packet "${path}" has not been uploaded yet (PUT its bytes to the presignedUrl first)`);
}
