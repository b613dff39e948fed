import { getProjectByRef, listRunRetention, type EnvironmentRetention } from "@svc/runtime/engine";
import { stringOption, table, type Command } from "../command.ts";

function setting(e: EnvironmentRetention): string {
  const days = e.days ?? e.parentDays;
  const inherited = e.days === null ? (e.parentDays === null ? "" : " (as preview)") : "";
  if (days === null) return "default (the workers' RUN_RETENTION_DAYS, 30 unless set)";
  return `${days === 0 ? "forever" : `${days} day${days === 1 ? "" : "s"}`}${inherited}`;
}

/** How long each environment of a project keeps finished runs, and what its last retention sweep deleted. */
export const retentionShowCommand: Command = {
  name: "retention show",
  usage: "retention show --project <ref> [--json]",
  description: "Show how long each environment of a project keeps finished runs, and its last retention sweep",
  options: { project: { type: "string" } },
  required: ["project"],
  async run(ctx, args) {
    const project = await getProjectByRef(ctx.db, stringOption(args, "project"));
    const environments = await listRunRetention(ctx.db, project.id);
    const name = (e: EnvironmentRetention) => (e.branchName === null ? e.slug : `preview/${e.branchName}${e.archived ? " (archived)" : ""}`);
    const lastSweep = (e: EnvironmentRetention) =>
      e.sweptAt ? `; last sweep ${e.sweptAt.toISOString()} deleted ${e.lastDeleted?.runs ?? 0} runs (${e.deletedRuns} in all)` : "";
    return {
      json: {
        projectRef: project.ref,
        environments: environments.map((e) => ({
          environment: e.slug,
          ...(e.branchName === null ? {} : { branch: e.branchName }),
          environmentId: e.environmentId,
          days: e.days,
          ...(e.branchName === null ? {} : { previewDays: e.parentDays }),
          sweptAt: e.sweptAt?.toISOString() ?? null,
          lastDeleted: e.lastDeleted,
          deletedRuns: e.deletedRuns,
        })),
      },
      text: `Run retention of ${project.ref}\n${table(environments.map((e) => [name(e), setting(e) + lastSweep(e)]))}`,
    };
  },
};
