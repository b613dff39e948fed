import { archiveBranch, NotFoundError, sanitizeBranchName } from "@svc/runtime/engine";
import { stringOption, type Command } from "../command.ts";

export const branchesArchiveCommand: Command = {
  name: "branches archive",
  usage: "branches archive --project <ref> <branch> [--json]",
  description: "Archive a preview branch: its name is free again and its tokens stop working",
  options: { project: { type: "string" } },
  required: ["project"],
  positionals: ["branch"],
  async run(ctx, args) {
    const projectRef = stringOption(args, "project");
    const branch = sanitizeBranchName(args.positionals[0]) ?? args.positionals[0]!;
    const { changed } = await archiveBranch(ctx.db, projectRef, branch, ctx.now);
    if (!changed) throw new NotFoundError(`${projectRef} has no live preview branch named ${branch}`);
    return { json: { projectRef, branch, archived: true }, text: `Archived preview branch ${branch} of ${projectRef}` };
  },
};
