import { createPersonalAccessToken, getUserByEmail } from "@svc/runtime/engine";
import { stringOption, type Command } from "../command.ts";

export const patsCreateCommand: Command = {
  name: "pats create",
  usage: "pats create --user <email> --name <token name> [--json]",
  description: "Create a personal access token for a user; it is printed once and never shown again",
  options: { user: { type: "string" }, name: { type: "string" } },
  required: ["user", "name"],
  async run(ctx, args) {
    const user = await getUserByEmail(ctx.db, stringOption(args, "user"));
    const { token, summary } = await createPersonalAccessToken(ctx.db, user.id, stringOption(args, "name"));
    return {
      json: { token, name: summary.name, user: user.email, createdAt: summary.createdAt.toISOString() },
      text: `Personal access token "${summary.name}" for ${user.email} (shown once, store it now):\n${token}`,
    };
  },
};
