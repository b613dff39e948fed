import type { RetrievedRun, RunSummary, RunWaitSummary } from "@svc/runtime";

/** `2025-06-01 12:00:03Z`: a time to read, in UTC (the same on every machine, as the API's). */
export function time(date: Date | undefined): string {
  return date ? date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "-";
}

/** `850ms`, `12.3s`, `4m 05s`, `2h 10m`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes}m ${String(Math.floor((ms % 60_000) / 1000)).padStart(2, "0")}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, "0")}m`;
}

/** Rows as aligned columns, the first row the header. */
export function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ").trimEnd()).join("\n");
}

export function runTable(runs: RunSummary[]): string {
  return columns([
    ["ID", "TASK", "STATUS", "CREATED", "DURATION", "TAGS"],
    ...runs.map((run) => [run.id, run.taskIdentifier, run.status, time(run.createdAt), run.durationMs > 0 ? duration(run.durationMs) : "-", run.tags.join(",")]),
  ]);
}

/** What a waiting run waits on, and how that wait ends. */
export function waitLine(wait: RunWaitSummary): string {
  switch (wait.type) {
    case "MANUAL":
      return `token ${wait.id}${wait.timeoutAt ? ` (times out ${time(wait.timeoutAt)})` : ""}: svc tokens complete ${wait.id} --output '<json>'`;
    case "DATETIME":
      return `until ${time(wait.resumeAt)}`;
    case "RUN":
      return `child run ${wait.runId}`;
    case "BATCH":
      return `batch ${wait.batchId}`;
    case "SESSION":
      return `session ${wait.sessionId}, channel ${wait.channel}`;
  }
}

/** A JSON value on the lines after a label, indented. */
function block(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(/\n/g, "\n  ");
}

/** `svc runs show`: the run's fields, then its payload, output or error, waits and relatives. */
export function runDetails(run: RetrievedRun): string {
  const fields: [string, string][] = [
    ["id", run.id],
    ["task", run.taskIdentifier],
    ["status", run.status],
    ["created", time(run.createdAt)],
  ];
  if (run.delayedUntil) fields.push(["delayed until", time(run.delayedUntil)]);
  if (run.startedAt) fields.push(["started", time(run.startedAt)]);
  if (run.finishedAt) fields.push(["finished", time(run.finishedAt)]);
  if (run.durationMs > 0) fields.push(["duration", duration(run.durationMs)]);
  fields.push(["attempts", String(run.attemptCount)]);
  if (run.version) fields.push(["version", run.version]);
  if (run.tags.length > 0) fields.push(["tags", run.tags.join(", ")]);
  if (run.idempotencyKey) fields.push(["idempotency key", run.idempotencyKey]);
  if (run.isTest) fields.push(["test run", "yes"]);
  if (run.relatedRuns.parent) fields.push(["parent", `${run.relatedRuns.parent.id} (${run.relatedRuns.parent.taskIdentifier})`]);
  for (const wait of run.waitingFor) fields.push(["waits for", waitLine(wait)]);
  for (const child of run.relatedRuns.children ?? []) fields.push(["child", `${child.id} (${child.taskIdentifier}, ${child.status})`]);
  const width = Math.max(...fields.map(([label]) => label.length));
  const lines = fields.map(([label, value]) => `${label.padEnd(width)}  ${value}`);
  if (run.payload !== undefined) lines.push(`payload:\n  ${block(run.payload)}`);
  if (run.metadata && Object.keys(run.metadata).length > 0) lines.push(`metadata:\n  ${block(run.metadata)}`);
  if (run.output !== undefined) lines.push(`output:\n  ${block(run.output)}`);
  if (run.error) lines.push(`error:\n  ${run.error.name ? `${run.error.name}: ` : ""}${run.error.message}${run.error.stackTrace ? `\n  ${run.error.stackTrace.replace(/\n/g, "\n  ")}` : ""}`);
  return lines.join("\n");
}
