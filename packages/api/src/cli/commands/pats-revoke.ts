import { getUserByEmail, NotFoundError, revokePersonalAccessToken } from "@svc/runtime/engine";
import { stringOption, UsageError, type Command } from "../command.ts";

export const patsRevokeCommand: Command = {
  name: "pats revoke",
  usage: "pats revoke --user <email> --id <token id> [--json]",
  description: "Revoke one of a user's personal access tokens (its id from `pats list`); it stops working at once",
  options: { user: { type: "string" }, id: { type: "string" } },
  required: ["user", "id"],
  validate(args) {
    if (!/^\d+$/.test(stringOption(args, "id"))) throw new UsageError("--id must be a token id from `pats list` (a number)");
  },
  async run(ctx, args) {
    const user = await getUserByEmail(ctx.db, stringOption(args, "user"));
    const id = Number(stringOption(args, "id"));
    const { changed } = await revokePersonalAccessToken(ctx.db, user.id, id, ctx.now);
    if (!changed) {
      const { rowCount } = await ctx.db.query(`SELECT 1 FROM personal_access_tokens WHERE id = $1 AND user_id = $2`, [id, user.id]);
      if (!rowCount) throw new NotFoundError(`${user.email} has no personal access token ${id}`);
    }
    return {
      json: { user: user.email, id, revoked: true, changed },
      text: changed ? `Revoked personal access token ${id} of ${user.email}` : `Personal access token ${id} of ${user.email} was already revoked`,
    };
  },
};
