import { createOrganization } from "@svc/runtime/engine";
import type { Command } from "../command.ts";

export const orgsCreateCommand: Command = {
  name: "orgs create",
  usage: "orgs create <slug> [--name <display name>] [--json]",
  description: "Create an organisation",
  positionals: ["slug"],
  options: { name: { type: "string" } },
  async run(ctx, { positionals, values }) {
    const org = await createOrganization(ctx.db, { slug: positionals[0]!, ...(typeof values.name === "string" ? { name: values.name } : {}) });
    return { json: org, text: `Created organisation ${org.slug} (${org.id})` };
  },
};
