/**
 * One SSE event in the shape the SDK reads (S2's): `event: batch` whose data is
 * `{"records":[…]}` (`recordsJson` is the records joined by commas), with `id:` the last record's
 * sequence number, so a browser's EventSource resumes with Last-Event-ID by itself.
 */
export function batchFrame(recordsJson: string, lastSeq: number): string {
  return `event: batch\nid: ${lastSeq}\ndata: {"records":[${recordsJson}]}\n\n`;
}

/** A comment line: keeps idle connections (and the proxies between) from timing out. */
export const HEARTBEAT_FRAME = ": ping\n\n";
