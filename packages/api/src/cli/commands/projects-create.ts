import { ConflictError, createProject, getOrganizationBySlug, slugify, validateSlug } from "@svc/runtime/engine";
import { stringOption, type Command } from "../command.ts";
import { credentialsJson, credentialsText } from "./shared.ts";

export const projectsCreateCommand: Command = {
  name: "projects create",
  usage: "projects create --org <slug> --name <name> [--slug <slug>] [--json]",
  description: "Create a project with its dev, staging, prod and preview environments; print the ref and the four secret keys",
  options: { org: { type: "string" }, name: { type: "string" }, slug: { type: "string" } },
  required: ["org", "name"],
  async run(ctx, args) {
    const org = await getOrganizationBySlug(ctx.db, stringOption(args, "org"));
    const name = stringOption(args, "name");
    const slug = validateSlug(typeof args.values.slug === "string" ? args.values.slug : slugify(name), "Project");
    const existing = await ctx.db.query(`SELECT 1 FROM projects WHERE organization_id = $1 AND slug = $2`, [org.id, slug]);
    if (existing.rows.length > 0) throw new ConflictError(`Organisation ${org.slug} already has a project with slug ${slug}; pass --slug`);
    const credentials = await createProject(ctx.db, ctx.box, { organizationId: org.id, name, slug });
    return {
      json: { ...credentialsJson(credentials), name, slug, organization: org.slug },
      text: credentialsText(credentials, `Created project ${name} (${credentials.projectRef}) in ${org.slug}`),
    };
  },
};
