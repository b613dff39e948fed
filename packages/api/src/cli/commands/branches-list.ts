import { listBranches } from "@svc/runtime/engine";
import { stringOption, table, type Command } from "../command.ts";

export const branchesListCommand: Command = {
  name: "branches list",
  usage: "branches list --project <ref> [--all] [--json]",
  description: "List a project's live preview branches (--all includes archived ones)",
  options: { project: { type: "string" }, all: { type: "boolean" } },
  required: ["project"],
  async run(ctx, args) {
    const projectRef = stringOption(args, "project");
    const branches = await listBranches(ctx.db, projectRef, { includeArchived: args.values.all === true });
    const json = {
      projectRef,
      branches: branches.map((b) => ({
        name: b.name,
        environmentId: b.environmentId,
        createdAt: b.createdAt.toISOString(),
        ...(b.archivedAt ? { archivedAt: b.archivedAt.toISOString() } : {}),
      })),
    };
    const text = branches.length
      ? `Preview branches of ${projectRef}\n${table(branches.map((b) => [b.name, b.archivedAt ? `${b.environmentId} (archived)` : b.environmentId]))}`
      : `${projectRef} has no preview branches`;
    return { json, text };
  },
};
