import { createBranch } from "@svc/runtime/engine";
import { stringOption, type Command } from "../command.ts";

export const branchesCreateCommand: Command = {
  name: "branches create",
  usage: "branches create --project <ref> <branch> [--json]",
  description: "Create a preview branch (reached with the preview secret key plus an x-service-branch header)",
  options: { project: { type: "string" } },
  required: ["project"],
  positionals: ["branch"],
  async run(ctx, args) {
    const projectRef = stringOption(args, "project");
    const { environment, created } = await createBranch(ctx.db, projectRef, args.positionals[0]!);
    const branch = environment.branchName!;
    return {
      json: { projectRef, branch, environmentId: environment.id, created },
      text: `${created ? "Created" : "Existing"} preview branch ${branch} (${environment.id}) in ${projectRef}`,
    };
  },
};
