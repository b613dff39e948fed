// What a WAITING run waits on (engine RunWait rows) as the run object's `waitingFor` entries.
import type { RunWait } from "@svc/runtime/engine";
import type { RunWaitingFor } from "@svc/runtime/contracts";

export function presentWaitingFor(waits: readonly RunWait[]): RunWaitingFor[] {
  return waits.map(presentWait);
}

function presentWait(wait: RunWait): RunWaitingFor {
  const id = wait.waitpointId;
  const timeoutAt = wait.timeoutAt ? { timeoutAt: wait.timeoutAt.toISOString() } : {};
  switch (wait.type) {
    case "MANUAL":
      return { type: "MANUAL", id, ...timeoutAt };
    case "DATETIME":
      // A DATETIME waitpoint is made with its wake-up time (DurableExecution's waits), never without.
      return { type: "DATETIME", id, resumeAt: wait.timeoutAt!.toISOString() };
    case "RUN":
      return { type: "RUN", id, runId: wait.childRunId! };
    case "BATCH":
      return { type: "BATCH", id, batchId: wait.batchId! };
    case "SESSION":
      return { type: "SESSION", id, sessionId: wait.sessionId!, channel: wait.channel!, ...timeoutAt };
  }
}
