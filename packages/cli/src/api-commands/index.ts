import type { ApiCommand } from "./command.ts";
import { runsCancelCommand } from "./runs-cancel.ts";
import { runsListCommand } from "./runs-list.ts";
import { runsReplayCommand } from "./runs-replay.ts";
import { runsShowCommand } from "./runs-show.ts";
import { runsTriggerCommand } from "./runs-trigger.ts";
import { tokensCompleteCommand } from "./tokens-complete.ts";

/** The commands that talk to svc's HTTP API, in the order `--help` lists them. */
export const API_COMMANDS: ApiCommand[] = [runsListCommand, runsShowCommand, runsTriggerCommand, runsCancelCommand, runsReplayCommand, tokensCompleteCommand];

/** `runs`, `tokens`: the first words of those commands. */
export const API_COMMAND_GROUPS = [...new Set(API_COMMANDS.map((c) => c.name.split(" ")[0]!))];
