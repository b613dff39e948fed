/**
 * Where a sweep of one table has got to: the (time, id) of the last row it looked at, in the
 * order of the index it walks. The time travels as text, exactly as Postgres wrote it: a JS Date
 * keeps milliseconds, and a cursor rounded down would look at the same rows again forever.
 */
export interface Keyset {
  at: string;
  id: string;
}

/** Before every row. */
export const KEYSET_START: Keyset = { at: "-infinity", id: "" };

/** SQL for a timestamptz column as cursor text: UTC, microseconds, independent of the session's settings. */
export function keysetTimeSql(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}
