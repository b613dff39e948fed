import { getUserByEmail, listPersonalAccessTokens } from "@svc/runtime/engine";
import { stringOption, table, type Command } from "../command.ts";

export const patsListCommand: Command = {
  name: "pats list",
  usage: "pats list --user <email> [--json]",
  description: "List a user's personal access tokens (id, name, preview; revoked ones marked)",
  options: { user: { type: "string" } },
  required: ["user"],
  async run(ctx, args) {
    const user = await getUserByEmail(ctx.db, stringOption(args, "user"));
    const tokens = await listPersonalAccessTokens(ctx.db, user.id);
    const json = {
      user: user.email,
      tokens: tokens.map((t) => ({
        id: t.id,
        name: t.name,
        preview: t.preview,
        createdAt: t.createdAt.toISOString(),
        ...(t.revokedAt ? { revokedAt: t.revokedAt.toISOString() } : {}),
      })),
    };
    const text = tokens.length
      ? `Personal access tokens of ${user.email}\n${table(tokens.map((t) => [String(t.id), `${t.name}  ${t.preview}${t.revokedAt ? "  (revoked)" : ""}`]))}`
      : `${user.email} has no personal access tokens`;
    return { json, text };
  },
};
