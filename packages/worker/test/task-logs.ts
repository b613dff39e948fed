import type { TaskLogRecord, TaskLogSink } from "@svc/runtime/sdk";

/** A task log sink that keeps every record (tests read what task code and svc logged). */
export function collectTaskLogs(): TaskLogSink & { records: TaskLogRecord[]; of(runId: string): TaskLogRecord[]; notices(): string[] } {
  const records: TaskLogRecord[] = [];
  return {
    records,
    write: (record) => void records.push(record),
    of: (runId) => records.filter((r) => r.run.id === runId && !r.notice),
    notices: () => records.filter((r) => r.notice).map((r) => r.notice!),
  };
}
