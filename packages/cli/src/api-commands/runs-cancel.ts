import { isFinalRunStatus } from "@svc/runtime/engine";
import type { ApiCommand } from "./command.ts";

export const runsCancelCommand: ApiCommand = {
  name: "runs cancel",
  positionals: ["run id"],
  description: "Cancel a run that has not finished; a finished run stays as it is",
  examples: ["svc runs cancel run_1234"],
  async run({ client }, { positionals }) {
    const runId = positionals[0]!;
    const before = await client.runs.retrieve(runId);
    if (isFinalRunStatus(before.status)) {
      return { json: { id: runId, status: before.status, changed: false }, text: `${runId} had already finished (${before.status}); nothing changed` };
    }
    await client.runs.cancel(runId);
    const { status } = await client.runs.retrieve(runId);
    return { json: { id: runId, status, changed: status === "CANCELED" }, text: status === "CANCELED" ? `Canceled ${runId}` : `${runId} finished (${status}) before it could be canceled` };
  },
};
