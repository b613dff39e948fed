import type { ApiCommand } from "./command.ts";
import { stringOption, UsageError } from "./command.ts";
import { replayLocal } from "./replay-local.ts";

const FROM = ["start", "failure"] as const;

export const runsReplayCommand: ApiCommand = {
  name: "runs replay",
  positionals: ["run id"],
  description:
    "Start a new run of the same task with the run's payload, tags and metadata; --from failure resumes a failed run from the step that failed; " +
    "--local runs the task code here against the run's recorded ledger, writing nothing",
  options: {
    from: { type: "string", value: "start|failure", help: "failure: keep the failed run's recorded steps, waits and child results and run again from the step that failed (default: start)" },
    local: { type: "boolean", help: "run the run's task code in this process against its recorded ledger (no worker, nothing written): recorded steps return their results, the first unrecorded step runs here" },
    config: { type: "string", value: "path", help: "with --local: the project's svc.config.ts (default: SVC_CONFIG, else the one in this folder)" },
  },
  examples: ["svc runs replay run_1234", "svc runs replay run_1234 --from failure", "svc runs replay run_1234 --local", "node --inspect-brk --import tsx node_modules/.bin/svc runs replay run_1234 --local"],
  validate({ values }) {
    const from = values.from;
    if (from !== undefined && !FROM.includes(from as (typeof FROM)[number])) throw new UsageError(`--from must be start or failure, not "${String(from)}"`);
    if (values.local === true && from !== undefined) throw new UsageError("--local replays the run's own ledger and starts no run: --from does not go with it");
    if (values.local !== true && values.config !== undefined) throw new UsageError("--config goes with --local");
  },
  async run(ctx, args) {
    const runId = args.positionals[0]!;
    if (args.values.local === true) return replayLocal(ctx, runId, stringOption(args, "config"));
    const from = stringOption(args, "from") as (typeof FROM)[number] | undefined;
    const { id } = await ctx.client.runs.replay(runId, from ? { from } : undefined);
    const how = from === "failure" ? "from its failure" : "";
    return { json: { id, replayOf: runId, ...(from ? { from } : {}) }, text: `Replayed ${runId}${how ? ` ${how}` : ""} as ${id}\n  svc runs show ${id}` };
  },
};
