import type { ApiCommand } from "./command.ts";
import { runDetails } from "./format.ts";

export const runsShowCommand: ApiCommand = {
  name: "runs show",
  positionals: ["run id"],
  description: "Show a run: its status and times, payload, output or error, what it waits on, its parent and children",
  examples: ["svc runs show run_1234", "svc runs show run_1234 --json"],
  async run({ client }, { positionals }) {
    const run = await client.runs.retrieve(positionals[0]!);
    return { json: run, text: runDetails(run) };
  },
};
