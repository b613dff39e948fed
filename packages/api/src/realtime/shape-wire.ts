// The wire of ElectricSQL's HTTP shape protocol as `@electric-sql/client`'s ShapeStream reads it
// and @trigger.dev/core's SubscribeRunRawShape parses the rows: every value travels as Postgres
// text (or null) and is decoded by the client from the `electric-schema` header; a body is a JSON
// array of change messages ending with the `up-to-date` control message, the only one that makes
// the client emit. Offsets and handles are ours: the client echoes them back untouched.

/** Column types the client decodes (its parser turns int4/float8 into numbers, bool "t"/"f" into booleans, jsonb into values). */
type ColumnType = "text" | "timestamp" | "int4" | "float8" | "bool" | "jsonb";

export interface ShapeColumn {
  name: string;
  type: ColumnType;
  /** 1: a Postgres array literal (`{"a","b"}`) of `type`. */
  dims?: 1;
}

/** The run row's columns, named and typed as the SDK's SubscribeRunRawShape expects them. */
export const RUN_COLUMNS: readonly ShapeColumn[] = [
  { name: "id", type: "text" },
  { name: "friendlyId", type: "text" },
  { name: "taskIdentifier", type: "text" },
  { name: "status", type: "text" },
  { name: "createdAt", type: "timestamp" },
  { name: "updatedAt", type: "timestamp" },
  { name: "startedAt", type: "timestamp" },
  { name: "delayUntil", type: "timestamp" },
  { name: "queuedAt", type: "timestamp" },
  { name: "expiredAt", type: "timestamp" },
  { name: "completedAt", type: "timestamp" },
  { name: "idempotencyKey", type: "text" },
  { name: "number", type: "int4" },
  { name: "isTest", type: "bool" },
  { name: "usageDurationMs", type: "int4" },
  { name: "costInCents", type: "float8" },
  { name: "baseCostInCents", type: "float8" },
  { name: "ttl", type: "text" },
  { name: "payload", type: "text" },
  { name: "payloadType", type: "text" },
  { name: "metadata", type: "text" },
  { name: "metadataType", type: "text" },
  { name: "output", type: "text" },
  { name: "outputType", type: "text" },
  { name: "runTags", type: "text", dims: 1 },
  { name: "error", type: "jsonb" },
  { name: "realtimeStreams", type: "text", dims: 1 },
];

/** Columns a subscriber cannot skip: the SDK needs them to build a run. */
export const RESERVED_COLUMNS: readonly string[] = ["id", "friendlyId", "taskIdentifier", "status", "createdAt", "updatedAt"];

/** A row's values as they travel: Postgres text or null, by column name. */
export type WireRow = Record<string, string | null>;

/** The columns left after `skip` (reserved ones are never skipped, unknown names are ignored). */
export function shapeColumns(skip: ReadonlySet<string>): ShapeColumn[] {
  return RUN_COLUMNS.filter((c) => RESERVED_COLUMNS.includes(c.name) || !skip.has(c.name));
}

/** The `electric-schema` header: each column's type, so the client decodes the text values. */
export function schemaHeader(columns: readonly ShapeColumn[]): string {
  const schema: Record<string, { type: string; dims?: number }> = {};
  for (const c of columns) schema[c.name] = c.dims ? { type: c.type, dims: c.dims } : { type: c.type };
  return JSON.stringify(schema);
}

/** A timestamp as the SDK reads it: it appends "Z" itself (Trigger.dev's columns have no zone). */
export function wireTimestamp(date: Date | null): string | null {
  return date ? date.toISOString().slice(0, -1) : null;
}

/** A text array as a Postgres array literal, every element quoted (the client's parser unquotes). */
export function wireTextArray(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`).join(",")}}`;
}

/** Keeps only `columns` of a full row. */
export function projectRow(row: WireRow, columns: readonly ShapeColumn[]): WireRow {
  const out: WireRow = {};
  for (const c of columns) out[c.name] = row[c.name] ?? null;
  return out;
}

const UP_TO_DATE = `{"headers":{"control":"up-to-date"}}`;

/** A response body: one change message per row, then `up-to-date`. */
export function changesBody(rows: readonly WireRow[], operation: "insert" | "update"): string {
  const messages = rows.map((value) => JSON.stringify({ key: `"public"."runs"/"${value.id}"`, value, headers: { operation } }));
  messages.push(UP_TO_DATE);
  return `[${messages.join(",")}]`;
}

/** The body of a 409: the client drops what it has and reads the shape again from the start. */
export const MUST_REFETCH_BODY = `[{"headers":{"control":"must-refetch"}}]`;

/** The offset of a client that has nothing yet. */
export const INITIAL_OFFSET = "-1";
/** Longest offset accepted (a snapshot lists the transactions in progress at its read). */
export const MAX_OFFSET_LENGTH = 8192;
const OFFSET_PATTERN = /^([0-9]{1,20})_([0-9]{1,20})(?:_([0-9]{1,20}(?:\.[0-9]{1,20})*))?$/;
const MAX_XID8 = (1n << 63n) - 1n;

/**
 * A snapshot (`pg_snapshot` text, `xmin:xmax:xip,…`) as an offset: `xmin_xmax[_xip.xip…]`, made of
 * characters a query string carries as they are.
 */
export function offsetOfSnapshot(snapshot: string): string {
  const [xmin, xmax, xip] = snapshot.split(":");
  return xip ? `${xmin}_${xmax}_${xip.replaceAll(",", ".")}` : `${xmin}_${xmax}`;
}

/** The snapshot an offset stands for, or null when it is not one this server could have given. */
export function snapshotOfOffset(offset: string): string | null {
  if (offset.length > MAX_OFFSET_LENGTH) return null;
  const match = OFFSET_PATTERN.exec(offset);
  if (!match) return null;
  const xmin = BigInt(match[1]!);
  const xmax = BigInt(match[2]!);
  if (xmax > MAX_XID8 || xmin > xmax || xmin === 0n) return null;
  const xip = match[3] ? match[3].split(".").map(BigInt) : [];
  for (let i = 0; i < xip.length; i++) {
    if (xip[i]! < xmin || xip[i]! >= xmax || (i > 0 && xip[i]! <= xip[i - 1]!)) return null;
  }
  return `${xmin}:${xmax}:${xip.join(",")}`;
}
