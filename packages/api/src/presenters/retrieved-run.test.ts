import { describe, expect, it } from "vitest";
import { RetrieveRunResponse } from "@svc/runtime/contracts";
import type { RunRow } from "@svc/runtime/engine";
import { presentRetrievedRun } from "./retrieved-run.ts";

const AT = new Date("2026-01-01T00:00:00.000Z");

function row(overrides: Partial<RunRow>): RunRow {
  return {
    id: "run_1", environment_id: "env_1", project_id: "proj_1", task_identifier: "t", status: "QUEUED", queue_name: "task/t", concurrency_key: null,
    payload: null, payload_type: "application/json", output: null, output_type: null, error: null, idempotency_key: null, idempotency_key_user: null, idempotency_key_scope: null,
    idempotency_key_expires_at: null, debounce_key: null, tags: [], metadata: null, max_attempts: null, max_duration_s: null, ttl: null, expire_at: null, delay_until: null,
    available_at: null, attempt_number: 0, ledger_epoch: 0, claim_token: null, traceparent: null, wait_traceparent: null, lease_expires_at: null, offered_at: null, offered_start: false, claim_from_runs: false, worker_id: null,
    worker_version: null, ledger_version: 0, suspended_worker_id: null, parent_run_id: null, root_run_id: null, depth: 0, trigger_function: "trigger", awaited: false, batch_id: null, batch_index: null,
    schedule_id: null, is_test: false, created_at: AT, updated_at: AT, started_at: null, finished_at: null, expired_at: null, metadata_ops_epoch: null, metadata_ops: null, ...overrides,
  };
}

describe("presentRetrievedRun", () => {
  it("leaves absent fields out (never null) and answers what the contract schema accepts unchanged", () => {
    const bare = presentRetrievedRun({ run: row({}), children: [], payload: {}, output: {}, waitingFor: [] });
    expect(Object.values(bare)).not.toContain(null);
    expect(bare).not.toHaveProperty("startedAt");
    expect(bare.waitingFor).toEqual([]);
    expect(RetrieveRunResponse.parse(bare)).toEqual(bare);

    const finished = row({ status: "COMPLETED", started_at: AT, finished_at: new Date(AT.getTime() + 1500), batch_id: "batch_1", metadata: { k: 1 } });
    const full = presentRetrievedRun({
      run: finished,
      parent: row({ id: "run_0" }),
      children: [row({ id: "run_2", depth: 1 })],
      payload: { inline: { data: '{"a":1}', type: "application/json" } },
      output: { url: "https://x/packets/p" },
      schedule: { id: "sched_1", expression: "0 * * * *", description: "hourly" },
      waitingFor: [],
    });
    expect(full).toMatchObject({ durationMs: 1500, batchId: "batch_1", payload: { a: 1 }, outputPresignedUrl: "https://x/packets/p" });
    expect(full.schedule).toEqual({ id: "sched_1", generator: { type: "CRON", expression: "0 * * * *", description: "hourly" } });
    expect(RetrieveRunResponse.parse(full)).toEqual(full);
  });

  it("says what a WAITING run waits on, by waitpoint type, in a shape the contract schema accepts unchanged", () => {
    const wait = { timeoutAt: null, childRunId: null, batchId: null, sessionId: null, channel: null };
    const later = new Date(AT.getTime() + 60_000);
    const waiting = presentRetrievedRun({
      run: row({ status: "WAITING" }),
      children: [],
      payload: {},
      output: {},
      waitingFor: [
        { ...wait, waitpointId: "waitpoint_token", type: "MANUAL", timeoutAt: later },
        { ...wait, waitpointId: "waitpoint_token2", type: "MANUAL" },
        { ...wait, waitpointId: "waitpoint_sleep", type: "DATETIME", timeoutAt: later },
        { ...wait, waitpointId: "waitpoint_child", type: "RUN", childRunId: "run_child" },
        { ...wait, waitpointId: "waitpoint_batch", type: "BATCH", batchId: "batch_1" },
        { ...wait, waitpointId: "waitpoint_session", type: "SESSION", sessionId: "session_1", channel: "in" },
      ],
    });
    expect(waiting.waitingFor).toEqual([
      { type: "MANUAL", id: "waitpoint_token", timeoutAt: later.toISOString() },
      { type: "MANUAL", id: "waitpoint_token2" },
      { type: "DATETIME", id: "waitpoint_sleep", resumeAt: later.toISOString() },
      { type: "RUN", id: "waitpoint_child", runId: "run_child" },
      { type: "BATCH", id: "waitpoint_batch", batchId: "batch_1" },
      { type: "SESSION", id: "waitpoint_session", sessionId: "session_1", channel: "in" },
    ]);
    expect(RetrieveRunResponse.parse(waiting)).toEqual(waiting);
  });
});
