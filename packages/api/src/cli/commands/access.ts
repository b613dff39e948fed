import {
  addOrganizationMember,
  addProjectMember,
  createPersonalAccessToken,
  createUser,
  findUserByEmail,
  getOrganizationBySlug,
  getProjectByRef,
} from "@svc/runtime/engine";
import { UsageError, type Command } from "../command.ts";
import { onlyProject } from "./shared.ts";

/**
 * One step from nothing to signing in to the dashboard (or calling the PAT routes): the user is
 * created when new, made a member of the project (or organisation), and given a new PAT, printed
 * once. Safe to run again: it only adds a new token.
 */
export const accessCommand: Command = {
  name: "access",
  usage: "access <email> [--project <ref> | --org <slug>] [--name <token name>] [--json]",
  description: "Give a person access in one step: create the user if new, add them to the project (default: the only one), print a new personal access token for the dashboard",
  positionals: ["email"],
  options: { project: { type: "string" }, org: { type: "string" }, name: { type: "string" } },
  validate({ values }) {
    if (typeof values.project === "string" && typeof values.org === "string") throw new UsageError("pass at most one of --project or --org");
  },
  async run(ctx, { positionals, values }) {
    const email = positionals[0]!;
    const user = (await findUserByEmail(ctx.db, email)) ?? (await createUser(ctx.db, { email }));
    let scope: string;
    if (typeof values.org === "string") {
      const org = await getOrganizationBySlug(ctx.db, values.org);
      await addOrganizationMember(ctx.db, org.id, user.id);
      scope = `organisation ${org.slug}`;
    } else {
      const project = typeof values.project === "string" ? await getProjectByRef(ctx.db, values.project) : await onlyProject(ctx.db);
      await addProjectMember(ctx.db, project.id, user.id);
      scope = `project ${project.ref}`;
    }
    const { token, summary } = await createPersonalAccessToken(ctx.db, user.id, typeof values.name === "string" ? values.name : "dashboard");
    return {
      json: { token, user: user.email, member: scope, name: summary.name },
      text: `${user.email} is a member of ${scope}. Personal access token "${summary.name}" (shown once, store it now):\n${token}\nSign in at <API URL>/dashboard with it.`,
    };
  },
};
