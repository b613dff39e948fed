import { createUser } from "@svc/runtime/engine";
import type { Command } from "../command.ts";

export const usersCreateCommand: Command = {
  name: "users create",
  usage: "users create <email> [--name <name>] [--json]",
  description: "Create a user (who can then get PATs and project memberships)",
  positionals: ["email"],
  options: { name: { type: "string" } },
  async run(ctx, { positionals, values }) {
    const user = await createUser(ctx.db, { email: positionals[0]!, ...(typeof values.name === "string" ? { name: values.name } : {}) });
    return {
      json: { id: user.id, email: user.email, ...(user.name ? { name: user.name } : {}) },
      text: `Created user ${user.email} (${user.id})`,
    };
  },
};
