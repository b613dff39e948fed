import type { Queryable } from "../../db/queryable.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../errors.ts";
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
  upload_expires_at: Date;
  /** When the upload token was used; null until then (each presign clears it). */
  uploaded_at: Date | null;
  created_at: Date;
}

/** How long an upload URL accepts its one upload. */
export const PACKET_UPLOAD_URL_SECONDS = 3600;

export const MAX_PACKET_PATH_LENGTH = 1024;

/** A path segment of PACKET_PATH_PATTERN: common file-name characters, and never `.` or `..`. */
const PACKET_SEGMENT = "([A-Za-z0-9_~@+=,-][A-Za-z0-9_.~@+=,-]*|[.][A-Za-z0-9_~@+=,-][A-Za-z0-9_.~@+=,-]*|[.][.][A-Za-z0-9_.~@+=,-]+)";

/**
 * Packet paths as the OpenAPI document shows them: `/`-separated segments of common file-name
 * characters (`run_x/payload.json`), no `.` or `..` segment, nothing to trim. A safe subset of
 * what validatePacketPath takes, which also takes other characters but no control characters.
 */
export const PACKET_PATH_PATTERN = `^${PACKET_SEGMENT}(/${PACKET_SEGMENT})*$`;

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
 * Reserves `path` in the environment and returns a fresh upload token, good for one upload within
 * PACKET_UPLOAD_URL_SECONDS. The token starts with the environment id, so the unauthenticated
 * upload finds its row through the primary key. Presigning the same path again replaces the token
 * (the old upload URL stops working); bytes already uploaded stay until the new upload.
 */
export async function presignPacketUpload(db: Queryable, environmentId: string, path: string, now: Date): Promise<string> {
  const token = `${environmentId}.${randomId(40)}`;
  const expiresAt = new Date(now.getTime() + PACKET_UPLOAD_URL_SECONDS * 1000);
  const { rows } = await db.query<{ upload_token: string }>(
    `INSERT INTO packets (environment_id, path, content_type, data, upload_token, upload_expires_at, created_at)
     VALUES ($1, $2, 'application/octet-stream', NULL, $3, $4, $5)
     ON CONFLICT (environment_id, path) DO UPDATE
       SET upload_token = EXCLUDED.upload_token, upload_expires_at = EXCLUDED.upload_expires_at, uploaded_at = NULL
     RETURNING upload_token`,
    [environmentId, path, token, expiresAt, now],
  );
  return rows[0]!.upload_token;
}

function environmentOfToken(token: string): string | null {
  const dot = token.indexOf(".");
  return dot > 0 ? token.slice(0, dot) : null;
}

/**
 * Throws unless the upload token may be used now: NotFoundError when unknown, replaced or expired,
 * ConflictError when already used. Cheap (primary key), so the upload URL checks it before reading
 * a byte of the body.
 */
export async function assertUploadTokenUsable(db: Queryable, token: string, now: Date): Promise<void> {
  const environmentId = environmentOfToken(token);
  const { rows } = environmentId
    ? await db.query<{ expired: boolean; used: boolean }>(
        `SELECT upload_expires_at <= $3 AS expired, uploaded_at IS NOT NULL AS used
         FROM packets WHERE environment_id = $1 AND upload_token = $2`,
        [environmentId, token, now],
      )
    : { rows: [] };
  const row = rows[0];
  if (!row) throw new NotFoundError("Upload URL not found or replaced by a newer one");
  if (row.used) throw new ConflictError("Upload URL already used: upload URLs are single-use, presign the path again");
  if (row.expired) throw new NotFoundError(`Upload URL expired (upload URLs are valid for ${PACKET_UPLOAD_URL_SECONDS} s): presign the path again`);
}

/**
 * Stores the uploaded bytes for an upload token and uses the token up; the errors of
 * assertUploadTokenUsable when it may not be used (a concurrent upload with the same URL included).
 */
export async function storePacketUpload(db: Queryable, token: string, contentType: string, data: Buffer, now: Date): Promise<{ environmentId: string; path: string }> {
  const environmentId = environmentOfToken(token);
  const { rows } = environmentId
    ? await db.query<{ environment_id: string; path: string }>(
        `UPDATE packets SET data = $3, content_type = $4, uploaded_at = $5
         WHERE environment_id = $1 AND upload_token = $2 AND uploaded_at IS NULL AND upload_expires_at > $5
         RETURNING environment_id, path`,
        [environmentId, token, data, contentType, now],
      )
    : { rows: [] };
  const row = rows[0];
  if (!row) {
    await assertUploadTokenUsable(db, token, now);
    throw new ConflictError("Upload URL already used: upload URLs are single-use, presign the path again");
  }
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

/**
 * Trigger-time check for `application/store` payloads: the packet must exist and hold its bytes.
 * Called in the trigger's transaction, it holds the packet FOR KEY SHARE until the run that names
 * it commits, so the retention sweep (deletePacketBatch) cannot delete a packet a run is about to name.
 */
export async function assertPacketUploaded(db: Queryable, environmentId: string, path: string): Promise<void> {
  const { rows } = await db.query<{ uploaded: boolean }>(
    `SELECT data IS NOT NULL AS uploaded FROM packets WHERE environment_id = $1 AND path = $2 FOR KEY SHARE`,
    [environmentId, path],
  );
  if (!rows[0]) throw new ValidationError(`payload: packet "${path}" not found; get an upload URL with PUT /api/v2/packets/{file} first`);
  if (!rows[0].uploaded) throw new ValidationError(`payload: packet "${path}" has not been uploaded yet (PUT its bytes to the presignedUrl first)`);
}
