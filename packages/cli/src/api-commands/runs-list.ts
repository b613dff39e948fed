import type { ListProjectRunsQuery, RunStatus } from "@svc/runtime";
import { LEGACY_RUN_STATUSES, RUN_STATUSES } from "@svc/runtime/engine";
import { integerOption, listOption, stringOption, UsageError, type ApiCommand, type CommandArgs } from "./command.ts";
import { runTable } from "./format.ts";

const STATUS_NAMES = new Set<string>([...RUN_STATUSES, ...Object.keys(LEGACY_RUN_STATUSES)]);

function statuses(args: CommandArgs): RunStatus[] | undefined {
  const given = listOption(args, "status")?.map((s) => s.toUpperCase());
  const unknown = given?.filter((s) => !STATUS_NAMES.has(s));
  if (unknown?.length) throw new UsageError(`unknown status ${unknown.join(", ")}; statuses: ${RUN_STATUSES.join(", ")}`);
  return given as RunStatus[] | undefined;
}

/** A time filter: an ISO date-time, or epoch milliseconds. */
function instant(args: CommandArgs, name: string): Date | undefined {
  const value = stringOption(args, name);
  if (value === undefined) return undefined;
  const date = /^\d+$/.test(value) ? new Date(Number(value)) : new Date(value);
  if (Number.isNaN(date.getTime())) throw new UsageError(`--${name} must be a date-time such as 2025-06-01T12:00:00Z, not "${value}"`);
  return date;
}

/** The API's list filters (GET /api/v1/runs `filter[…]` and `page[…]`) from the options. */
function query(args: CommandArgs): ListProjectRunsQuery {
  const q: ListProjectRunsQuery = {
    status: statuses(args),
    taskIdentifier: listOption(args, "task"),
    tag: listOption(args, "tag"),
    version: listOption(args, "version"),
    queue: listOption(args, "queue"),
    batch: stringOption(args, "batch"),
    schedule: stringOption(args, "schedule"),
    bulkAction: stringOption(args, "bulk-action"),
    period: stringOption(args, "period"),
    from: instant(args, "from"),
    to: instant(args, "to"),
    limit: integerOption(args, "limit", 1, 100),
    after: stringOption(args, "after"),
    before: stringOption(args, "before"),
    env: listOption(args, "env"),
  };
  if (typeof args.values.test === "boolean") q.isTest = args.values.test;
  for (const key of Object.keys(q) as (keyof ListProjectRunsQuery)[]) if (q[key] === undefined) delete q[key];
  return q;
}

export const runsListCommand: ApiCommand = {
  name: "runs list",
  description: "List runs, newest first (the last 7 days unless --period, --from or --to say otherwise), one page at a time",
  options: {
    status: { type: "string", multiple: true, help: `only runs in these statuses (${RUN_STATUSES.join(", ")})` },
    task: { type: "string", multiple: true, value: "task id", help: "only runs of these tasks" },
    tag: { type: "string", multiple: true, help: "only runs with any of these tags" },
    version: { type: "string", multiple: true, help: "only runs of these worker versions" },
    queue: { type: "string", multiple: true, help: "only runs in these queues (a task's own queue is task/<task id>)" },
    batch: { type: "string", value: "batch id", help: "only runs of this batch" },
    schedule: { type: "string", value: "schedule id", help: "only runs this schedule started" },
    "bulk-action": { type: "string", value: "bulk action id", help: "only runs this bulk action touched (from any time): a cancel's runs, a replay's new runs" },
    test: { type: "boolean", help: "only test runs (--no-test: only the others)" },
    period: { type: "string", value: "duration", help: "created within this long before now: 1h, 2d, 2w" },
    from: { type: "string", value: "date-time", help: "created at or after this time (ISO 8601, or epoch ms)" },
    to: { type: "string", value: "date-time", help: "created before this time" },
    limit: { type: "string", value: "1-100", help: "runs per page (25 by default)" },
    after: { type: "string", value: "cursor", help: "the page after this cursor (the list prints it when there are more)" },
    before: { type: "string", value: "cursor", help: "the page before this cursor" },
    project: { type: "string", value: "ref", help: "with a personal access token: the project whose runs to list" },
    env: { type: "string", multiple: true, value: "env", help: "with --project: its environments (dev, staging, prod, preview)" },
  },
  examples: ["svc runs list --status FAILED,CRASHED --period 1d", "svc runs list --task hello-world --tag user:42 --limit 10 --json"],
  validate(args) {
    query(args);
    if (args.values.env !== undefined && args.values.project === undefined) throw new UsageError("--env needs --project (with a secret key, the key's environment is listed)");
  },
  async run({ client, credential }, args) {
    const project = stringOption(args, "project");
    if (!project && credential.startsWith("svc_pat_")) throw new UsageError("a personal access token lists the runs of a project: pass --project <ref> (and --env)");
    const page = project ? await client.runs.list(project, query(args)) : await client.runs.list(query(args));
    const more = page.pagination.next ? `\nmore: svc runs list … --after ${page.pagination.next}` : "";
    return {
      json: { data: page.data, pagination: page.pagination },
      text: page.data.length === 0 ? "no runs match" : `${runTable(page.data)}${more}`,
    };
  },
};
