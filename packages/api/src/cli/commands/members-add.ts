import { addOrganizationMember, addProjectMember, getOrganizationBySlug, getProjectByRef, getUserByEmail } from "@svc/runtime/engine";
import { stringOption, UsageError, type Command } from "../command.ts";

export const membersAddCommand: Command = {
  name: "members add",
  usage: "members add (--project <ref> | --org <slug>) --user <email> [--json]",
  description: "Give a user access to a project (or to every project of an organisation)",
  options: { project: { type: "string" }, org: { type: "string" }, user: { type: "string" } },
  required: ["user"],
  validate({ values }) {
    if ((typeof values.project === "string") === (typeof values.org === "string")) throw new UsageError("pass exactly one of --project or --org");
  },
  async run(ctx, args) {
    const user = await getUserByEmail(ctx.db, stringOption(args, "user"));
    if (typeof args.values.project === "string") {
      const project = await getProjectByRef(ctx.db, args.values.project);
      const { added } = await addProjectMember(ctx.db, project.id, user.id);
      return {
        json: { user: user.email, projectRef: project.ref, added },
        text: added ? `Added ${user.email} to project ${project.ref}` : `${user.email} is already a member of ${project.ref}`,
      };
    }
    const org = await getOrganizationBySlug(ctx.db, stringOption(args, "org"));
    const { added } = await addOrganizationMember(ctx.db, org.id, user.id);
    return {
      json: { user: user.email, organization: org.slug, added },
      text: added ? `Added ${user.email} to organisation ${org.slug}` : `${user.email} is already a member of ${org.slug}`,
    };
  },
};
