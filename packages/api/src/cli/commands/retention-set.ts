import {
  getBranchEnvironment, getProjectByRef, getRootEnvironment, MAX_RUN_RETENTION_DAYS, NotFoundError, parseEnvironmentSlug, sanitizeBranchName, setRunRetention,
} from "@svc/runtime/engine";
import { stringOption, UsageError, type Command } from "../command.ts";

/** `<days>` as given: a whole number of days, or `default` (null). */
function parseDays(value: string): number | null {
  if (value === "default") return null;
  const days = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(days <= MAX_RUN_RETENTION_DAYS)) throw new UsageError(`<days> must be a whole number of days from 0 (keep forever) to ${MAX_RUN_RETENTION_DAYS}, or "default"; not "${value}"`);
  return days;
}

/**
 * Sets how long one environment keeps finished runs: the workers' retention sweep deletes runs
 * (with their attempts, ledger, waitpoints, batches, packets) that finished longer ago. Takes
 * effect at the environment's next sweep (RUN_RETENTION_INTERVAL_SECONDS).
 */
export const retentionSetCommand: Command = {
  name: "retention set",
  usage: "retention set --project <ref> --env <dev|staging|prod|preview> [--branch <name>] <days|default> [--json]",
  description: `Keep an environment's finished runs <days> days (0: forever, at most ${MAX_RUN_RETENTION_DAYS}); "default": the workers' RUN_RETENTION_DAYS (a preview branch: its preview environment's)`,
  options: { project: { type: "string" }, env: { type: "string" }, branch: { type: "string" } },
  required: ["project", "env"],
  positionals: ["days"],
  validate(args) {
    if (!parseEnvironmentSlug(String(args.values.env))) throw new UsageError(`--env must be dev, staging, prod or preview`);
    if (typeof args.values.branch === "string" && parseEnvironmentSlug(String(args.values.env)) !== "preview") throw new UsageError("--branch names a preview branch: use it with --env preview");
    parseDays(args.positionals[0]!);
  },
  async run(ctx, args) {
    const projectRef = stringOption(args, "project");
    const slug = parseEnvironmentSlug(stringOption(args, "env"))!;
    const days = parseDays(args.positionals[0]!);
    await getProjectByRef(ctx.db, projectRef); // NotFoundError when there is none
    const root = await getRootEnvironment(ctx.db, projectRef, slug);
    if (!root) throw new NotFoundError(`${projectRef} has no ${slug} environment`);
    const branchName = typeof args.values.branch === "string" ? (sanitizeBranchName(args.values.branch) ?? args.values.branch) : null;
    const env = branchName === null ? root : await getBranchEnvironment(ctx.db, root.id, branchName);
    if (!env) throw new NotFoundError(`${projectRef} has no live preview branch named ${branchName}`);
    await setRunRetention(ctx.db, env.id, days);
    const where = branchName === null ? slug : `preview branch ${branchName}`;
    const keeps = days === null ? "for the default period" : days === 0 ? "forever" : `for ${days} day${days === 1 ? "" : "s"}`;
    return {
      json: { projectRef, environment: slug, ...(branchName === null ? {} : { branch: branchName }), environmentId: env.id, days },
      text: `${projectRef} ${where} keeps finished runs ${keeps} (from its next retention sweep)`,
    };
  },
};
