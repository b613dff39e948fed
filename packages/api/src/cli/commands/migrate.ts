import type { Command } from "../command.ts";

export const migrateCommand: Command = {
  name: "migrate",
  usage: "migrate [--json]",
  description: "Bring the database's schema up to date and say what was applied (every command does this first; run it alone ahead of a rolling upgrade)",
  async run(ctx) {
    const { applied, functions } = ctx.migrated;
    const { rows } = await ctx.db.query<{ name: string }>(`SELECT name FROM svc_migrations ORDER BY id DESC LIMIT 1`);
    const latest = rows[0]?.name ?? null;
    const text = applied.length === 0 && functions.length === 0
      ? `The schema is up to date (${latest}).`
      : [
          applied.length > 0 ? `Applied ${applied.length} migration${applied.length === 1 ? "" : "s"}: ${applied.join(", ")}` : "No migration to apply.",
          ...(functions.length > 0 ? [`Functions (re)applied: ${functions.join(", ")}`] : []),
          `The schema is now at ${latest}.`,
        ].join("\n");
    return { json: { applied, functions, latest }, text };
  },
};
