import { DEFAULT_ROTATION_GRACE_MS, getRootEnvironment, NotFoundError, parseDuration, parseEnvironmentSlug, rotateSecretKey } from "@svc/runtime/engine";
import { stringOption, UsageError, type Command } from "../command.ts";

export const keysRotateCommand: Command = {
  name: "keys rotate",
  usage: "keys rotate --project <ref> --env <dev|staging|prod|preview> [--grace 24h] [--json]",
  description: "Issue a new secret key; the old one keeps working for the grace period (default 24h, 0s ends it now)",
  options: { project: { type: "string" }, env: { type: "string" }, grace: { type: "string" } },
  required: ["project", "env"],
  validate(args) {
    if (!parseEnvironmentSlug(stringOption(args, "env"))) throw new UsageError(`--env must be one of dev, staging, prod, preview`);
    const grace = args.values.grace;
    if (typeof grace === "string" && parseDuration(grace) === null && grace !== "0") {
      throw new UsageError(`--grace "${grace}" is not a duration (e.g. 30m, 24h, 7d, 0s)`);
    }
  },
  async run(ctx, args) {
    const projectRef = stringOption(args, "project");
    const slug = parseEnvironmentSlug(stringOption(args, "env"))!;
    const grace = typeof args.values.grace === "string" ? (parseDuration(args.values.grace) ?? 0) : DEFAULT_ROTATION_GRACE_MS;
    const env = await getRootEnvironment(ctx.db, projectRef, slug);
    if (!env) throw new NotFoundError(`Project ${projectRef} not found`);
    const { secretKey, oldKeysExpireAt } = await rotateSecretKey(ctx.db, ctx.box, env, ctx.now, grace);
    return {
      json: { projectRef, env: slug, secretKey, previousKeysExpireAt: oldKeysExpireAt.toISOString() },
      text: `New ${slug} secret key for ${projectRef}:\n${secretKey}\nPrevious keys stop working at ${oldKeysExpireAt.toISOString()}`,
    };
  },
};
