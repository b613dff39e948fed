import type { ApiCommand } from "./command.ts";

export const runsReplayCommand: ApiCommand = {
  name: "runs replay",
  positionals: ["run id"],
  description: "Start a new run of the same task with the run's payload, tags and metadata",
  examples: ["svc runs replay run_1234"],
  async run({ client }, { positionals }) {
    const runId = positionals[0]!;
    const { id } = await client.runs.replay(runId);
    return { json: { id, replayOf: runId }, text: `Replayed ${runId} as ${id}\n  svc runs show ${id}` };
  },
};
