/** How much of what a run logs is kept (docs/run-logs.md, docs/limits-and-errors.md). */
export interface RunLogLimits {
  /** Lines kept per run, over all its attempts; past it one line says the log was cut. */
  maxLines: number;
  /** Bytes kept per run (UTF-8 of each line's message and attributes as JSON). */
  maxBytes: number;
  /** Bytes of one line: a longer message is cut, and larger attributes are replaced by a note. */
  maxLineBytes: number;
}

export const DEFAULT_RUN_LOG_LIMITS: RunLogLimits = { maxLines: 2_000, maxBytes: 1_048_576, maxLineBytes: 8_192 };

/** The levels as stored (task code's `logger.*`, `console.*` mapped onto them). */
export const RUN_LOG_LEVELS = ["debug", "log", "info", "warn", "error"] as const;
export type RunLogLevel = (typeof RUN_LOG_LEVELS)[number];

/** Who wrote a line: task code's `logger`, its `console`, or svc about the run (the cap's note). */
export type RunLogSource = "logger" | "console" | "svc";

/** One line as the writer stores it. */
export interface RunLogLine {
  environmentId: string;
  runId: string;
  attempt: number;
  level: RunLogLevel;
  message: string;
  /** JSON-safe already (see boundLine). */
  attributes: Record<string, unknown> | null;
  loggedAt: Date;
  source: RunLogSource;
  /** The step.run whose function logged it. */
  step: string | null;
  /** The durable call (step, wait) of the ledger it came before. */
  ledger: { epoch: number; key: string } | null;
}

/** What a line costs against the per-run byte cap. */
export function lineBytes(line: Pick<RunLogLine, "message" | "attributes">): number {
  return Buffer.byteLength(line.message) + (line.attributes ? Buffer.byteLength(JSON.stringify(line.attributes)) : 0);
}

/**
 * A line within `maxLineBytes`: the message cut (with a note of how much was), attributes that
 * do not fit replaced by a note. Attributes become plain JSON here (Errors as name, message,
 * stack; values JSON cannot hold as text), so what is stored is what is counted.
 */
export function boundLine(line: RunLogLine, limits: Pick<RunLogLimits, "maxLineBytes">): RunLogLine {
  const attributes = line.attributes ? jsonSafe(line.attributes) : null;
  // Postgres text cannot hold NUL.
  let message = line.message.replaceAll("\u0000", "\uFFFD");
  const messageBytes = Buffer.byteLength(message);
  if (messageBytes > limits.maxLineBytes) {
    message = `${cutToBytes(message, limits.maxLineBytes)}… [svc: ${messageBytes - limits.maxLineBytes} more bytes not kept]`;
  }
  const attributesBytes = attributes ? Buffer.byteLength(JSON.stringify(attributes)) : 0;
  const room = Math.max(limits.maxLineBytes - Buffer.byteLength(message), 0);
  const kept = attributes && attributesBytes > room ? { "svc.truncated": `attributes of ${attributesBytes} bytes were not kept (a line keeps ${limits.maxLineBytes})` } : attributes;
  return { ...line, message, attributes: kept };
}

function cutToBytes(text: string, bytes: number): string {
  const buffer = Buffer.from(text);
  // Dropping a partial character at the cut: toString keeps U+FFFD for it, which is then removed.
  return buffer.subarray(0, bytes).toString().replace(/\uFFFD$/, "");
}

/** Attributes as JSON holds them: Errors as their fields, cycles and BigInts as text. */
function jsonSafe(attributes: Record<string, unknown>): Record<string, unknown> | null {
  const seen = new WeakSet<object>();
  try {
    const text = JSON.stringify(attributes, (_key, value: unknown) => {
      if (value instanceof Error) return { name: value.name, message: value.message, ...(value.stack ? { stack: value.stack } : {}) };
      if (typeof value === "bigint") return value.toString();
      if (typeof value === "object" && value !== null) {
        if (seen.has(value)) return "[Circular]";
        seen.add(value);
      }
      return value;
    });
    // \u0000 is valid JSON text but jsonb refuses it.
    return text === undefined ? null : (JSON.parse(text.replaceAll("\\u0000", "\\uFFFD")) as Record<string, unknown>);
  } catch (error) {
    return { "svc.unserializable": (error as Error).message };
  }
}
