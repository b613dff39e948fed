import superjson from "superjson";
import { decodePacket, type Packet } from "@svc/runtime/engine";

/**
 * A stored packet as the plain JSON value the SDK's `runs.retrieve` expects (Trigger.dev's
 * parsePacketAsJson): super+json keeps only its JSON part (a Date becomes its ISO string), text
 * stays text. Text that no longer parses is returned as is rather than failing the request.
 */
export function packetAsJson(packet: Packet): unknown {
  if (packet.data === null || packet.data === undefined) return undefined;
  try {
    if (packet.type === "application/super+json") return superjson.serialize(decodePacket(packet)).json;
    if (packet.type === "application/json") return decodePacket(packet);
    return packet.data;
  } catch {
    return packet.data;
  }
}
