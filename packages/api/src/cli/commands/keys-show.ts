import { getProjectByRef, listActiveSecretKeys, type EnvironmentSlug } from "@svc/runtime/engine";
import { table, type Command } from "../command.ts";
import { onlyProject } from "./shared.ts";

export const keysShowCommand: Command = {
  name: "keys show",
  usage: "keys show [--project <ref>] [--json]",
  description: "Show the valid secret keys of a project's environments (newest first; rotated ones with their expiry); the project may be left out when there is only one",
  options: { project: { type: "string" } },
  async run(ctx, args) {
    const project = typeof args.values.project === "string" ? await getProjectByRef(ctx.db, args.values.project) : await onlyProject(ctx.db);
    const { rows } = await ctx.db.query<{ id: string; slug: EnvironmentSlug }>(
      `SELECT id, slug FROM environments WHERE project_id = $1 AND parent_environment_id IS NULL
       ORDER BY array_position(ARRAY['dev','staging','prod','preview'], slug)`,
      [project.id],
    );
    const environments: Record<string, { secretKey: string; keys: { secretKey: string; createdAt: string; expiresAt?: string }[] }> = {};
    const lines: [string, string][] = [];
    for (const env of rows) {
      const keys = await listActiveSecretKeys(ctx.db, ctx.box, env.id, ctx.now);
      environments[env.slug] = {
        secretKey: keys[0]?.secretKey ?? "",
        keys: keys.map((k) => ({ secretKey: k.secretKey, createdAt: k.createdAt.toISOString(), ...(k.expiresAt ? { expiresAt: k.expiresAt.toISOString() } : {}) })),
      };
      for (const k of keys) lines.push([env.slug, k.expiresAt ? `${k.secretKey} (expires ${k.expiresAt.toISOString()})` : k.secretKey]);
    }
    return { json: { projectRef: project.ref, environments }, text: `Secret keys of ${project.ref}\n${table(lines)}` };
  },
};
