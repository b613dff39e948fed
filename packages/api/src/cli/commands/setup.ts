import { ensureDefaultProject } from "@svc/runtime/engine";
import type { Command } from "../command.ts";
import { credentialsJson, credentialsText } from "./shared.ts";

export const setupCommand: Command = {
  name: "setup",
  usage: "setup [--json]",
  description: "Create the default organisation and project if missing; print the project ref and its four secret keys",
  async run(ctx) {
    const credentials = await ensureDefaultProject(ctx.db, ctx.box, ctx.now);
    return { json: credentialsJson(credentials), text: credentialsText(credentials) };
  },
};
