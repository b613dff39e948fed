import { PAYLOAD_TYPES } from "../../contracts/trigger.ts";
import type { Queryable } from "../../db/queryable.ts";
import { ValidationError } from "../../errors.ts";
import { assertStorableJson, jsonNestingExceeds, tooDeepError } from "../json-text.ts";
import { parseSuperjson, stringifySuperjson } from "./superjson-text.ts";

export { PAYLOAD_TYPES, type PayloadType } from "../../contracts/trigger.ts";

/** A packet as stored: serialised text plus how to read it. */
export interface Packet {
  data: string | null;
  type: string;
}

/**
 * Text stored as it came: refused when Postgres would not store it as sent (NUL, half a surrogate
 * pair), and for JSON text also when a string in it holds one as an escape (`"\u0000"`,
 * `"\ud800"`): the same rule as a payload sent as a JSON value.
 */
function storedAsSent(data: string, type: string): Packet {
  if (data.includes("\u0000")) throw new ValidationError("payload: must not contain NUL characters");
  if (!data.isWellFormed()) throw new ValidationError("payload: must be valid Unicode (it holds half a surrogate pair)");
  if ((type === "application/json" || type === "application/super+json") && data.includes("\\u")) assertStorableJson(JSON.parse(data), "payload");
  return { data, type };
}

/**
 * Normalises a trigger's payload into stored text. The published SDK sends super+json as a string;
 * curl users send plain JSON values. Values arrived in a body the parser depth-checked; text
 * payloads are checked here, as they are parsed, since everything that reads them back walks them.
 */
export function encodePayload(payload: unknown, type: string): Packet {
  switch (type) {
    case "application/json":
      if (payload === undefined) return { data: null, type };
      if (typeof payload === "string") {
        try {
          JSON.parse(payload);
        } catch {
          return { data: JSON.stringify(payload), type };
        }
        if (jsonNestingExceeds(payload)) throw tooDeepError("payload");
        return storedAsSent(payload, type);
      }
      return { data: JSON.stringify(payload), type };
    case "application/super+json":
      if (typeof payload !== "string") return { data: stringifySuperjson(payload), type };
      if (jsonNestingExceeds(payload)) throw tooDeepError("payload");
      try {
        parseSuperjson(payload);
      } catch {
        throw new ValidationError("payload: application/super+json payload is not valid superjson text");
      }
      return storedAsSent(payload, type);
    case "text/plain":
      if (typeof payload !== "string") throw new ValidationError("payload: text/plain payload must be a string");
      return storedAsSent(payload, type);
    case "application/store":
      if (typeof payload !== "string" || payload.length === 0) {
        throw new ValidationError("payload: application/store payload must be the storagePath returned by PUT /api/v2/packets");
      }
      return storedAsSent(payload, type);
    default:
      throw new ValidationError(`payloadType: unsupported type "${type}" (use ${PAYLOAD_TYPES.join(", ")})`);
  }
}

/** Reads stored text back into a value (Dates and other superjson types restored). */
export function decodePacket(packet: Packet): unknown {
  if (packet.data === null || packet.data === undefined) return undefined;
  switch (packet.type) {
    case "application/super+json":
      return parseSuperjson(packet.data);
    case "text/plain":
      return packet.data;
    default:
      return JSON.parse(packet.data);
  }
}

/** Serialises a task's return value (or a token output) for storage, keeping Dates and friends. */
export function encodeOutput(value: unknown): Packet {
  if (value === undefined) return { data: null, type: "application/json" };
  return { data: stringifySuperjson(value), type: "application/super+json" };
}

/** Resolves application/store packets to their uploaded content. */
export async function loadStoredPacket(db: Queryable, environmentId: string, packet: Packet): Promise<Packet> {
  if (packet.type !== "application/store" || packet.data === null) return packet;
  const { rows } = await db.query<{ data: Buffer | null; content_type: string }>(
    `SELECT data, content_type FROM packets WHERE environment_id = $1 AND path = $2`,
    [environmentId, packet.data],
  );
  const row = rows[0];
  if (!row || row.data === null) throw new ValidationError(`payload: packet "${packet.data}" has not been uploaded`);
  return { data: row.data.toString("utf8"), type: row.content_type };
}
