// Payloads too big to send inline: uploaded first with PUT /api/v2/packets/{file}, then referred to
// by their storage path with payloadType application/store (Trigger.dev's protocol).
import { absoluteUrl, segment, type HttpTransport } from "./http.ts";

/** Payloads of this many bytes or more are uploaded as packets. */
export const PACKET_THRESHOLD_BYTES = 128 * 1024;

export interface SerializedPayload {
  payload?: string;
  payloadType: string;
}

/** JSON text for the wire: a string the server stores verbatim, so a string payload stays a string. */
export function serializePayload(value: unknown): SerializedPayload {
  if (value === undefined) return { payloadType: "application/json" };
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError("payload: not serialisable as JSON (a function or symbol?)");
  return { payload: text, payloadType: "application/json" };
}

/** Uploads a large serialized payload and returns what to send instead; small ones pass through. */
export async function offloadLargePayload(http: HttpTransport, serialized: SerializedPayload, filename: string): Promise<SerializedPayload> {
  if (serialized.payload === undefined) return serialized;
  const size = new TextEncoder().encode(serialized.payload).byteLength;
  if (size < PACKET_THRESHOLD_BYTES) return serialized;
  const { data } = await http.request<{ presignedUrl: string; storagePath?: string }>({
    method: "PUT",
    path: `/api/v2/packets/${segment(filename)}`,
  });
  await http.request({
    method: "PUT",
    path: "",
    url: absoluteUrl(http.config.baseURL, data.presignedUrl),
    anonymous: true,
    responseType: "text",
    rawBody: { content: serialized.payload, contentType: serialized.payloadType },
  });
  return { payload: data.storagePath ?? filename, payloadType: "application/store" };
}
