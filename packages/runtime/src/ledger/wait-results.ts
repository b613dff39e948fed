import { decodePacket } from "../engine/runs/payloads.ts";
import type { ChannelRecord, ChildRunResult, RawChannelResult, RawWaitResult } from "../sdk/run-context.ts";
import { BatchItemOutcomeSchema, parseStored, WaitOutcomeSchema } from "./outcomes.ts";

// Outcomes come from the ledger (or the statement that just recorded them): validated once here,
// where they become task code's values; outputs stay opaque text until decoded.

/** A token's or a sleep's wait outcome as task code gets it. */
export function waitResult(outcome: unknown): RawWaitResult {
  const o = parseStored(WaitOutcomeSchema, outcome, "a wait's ledger outcome");
  if (o.ok) return { ok: true, output: o.output == null ? undefined : decodePacket({ data: o.output, type: o.outputType ?? "application/json" }) };
  return { ok: false, error: withMessage(o.error, "wait failed") };
}

/** A waited child run's outcome. */
export function childResult(outcome: unknown, taskId: string): ChildRunResult {
  const o = parseStored(WaitOutcomeSchema, outcome, `the ledger outcome of a child run of ${taskId}`);
  return o.ok
    ? { ok: true, id: o.runId ?? "", taskIdentifier: taskId, output: o.output == null ? undefined : decodePacket({ data: o.output, type: o.outputType ?? "application/json" }) }
    : { ok: false, id: o.runId ?? "", taskIdentifier: taskId, error: withMessage(o.error, "child run failed") };
}

/** A waited batch's outcome: one result per item. */
export function batchResults(outcome: unknown): ChildRunResult[] {
  const o = parseStored(WaitOutcomeSchema, outcome, "a batch wait's ledger outcome");
  let parsed: unknown;
  try {
    parsed = JSON.parse(o.output ?? "[]");
  } catch (error) {
    throw new Error(`a batch wait's ledger outcome is not JSON: ${(error as Error).message}`, { cause: error });
  }
  const items = parseStored(BatchItemOutcomeSchema.array(), parsed, "a batch wait's results");
  return items.map((i) =>
    i.ok
      ? { ok: true, id: i.id, taskIdentifier: i.taskIdentifier, output: i.output == null ? undefined : decodePacket({ data: i.output, type: i.outputType ?? "application/json" }) }
      : { ok: false, id: i.id, taskIdentifier: i.taskIdentifier, error: withMessage(i.error, "child run failed") },
  );
}

/** A channel wait's outcome: the record it got, or why there is none (timeout, session closed). */
export function channelWaitResult(outcome: unknown): RawChannelResult {
  const o = parseStored(WaitOutcomeSchema, outcome, "a channel wait's ledger outcome");
  if (!o.ok) return { ok: false, error: withMessage(o.error, "wait failed") };
  return { ok: true, record: channelRecordOf(JSON.parse(o.output ?? "null")) };
}

/** A channel wait's output (`{ seq, id, data, headers? }`, see waitOutputJson) as task code gets it. */
export function channelRecordOf(value: unknown): ChannelRecord {
  const r = value as { seq: number; id: string; data: unknown; headers?: [string, string][] };
  return { seq: Number(r.seq), id: r.id, data: r.data, ...(r.headers ? { headers: r.headers } : {}) };
}

/** A stored error as task code gets it: always with a message (one stored as `{}` gets `fallback`). */
function withMessage<E extends { message?: string | undefined }>(error: E | undefined, fallback: string): E & { message: string } {
  return { ...error, message: error?.message ?? fallback } as E & { message: string };
}
