import type { Command } from "../command.ts";
import { accessCommand } from "./access.ts";
import { branchesArchiveCommand } from "./branches-archive.ts";
import { branchesCreateCommand } from "./branches-create.ts";
import { branchesListCommand } from "./branches-list.ts";
import { setupCommand } from "./setup.ts";
import { keysRotateCommand } from "./keys-rotate.ts";
import { keysShowCommand } from "./keys-show.ts";
import { membersAddCommand } from "./members-add.ts";
import { migrateCommand } from "./migrate.ts";
import { orgsCreateCommand } from "./orgs-create.ts";
import { patsCreateCommand } from "./pats-create.ts";
import { patsListCommand } from "./pats-list.ts";
import { patsRevokeCommand } from "./pats-revoke.ts";
import { projectsCreateCommand } from "./projects-create.ts";
import { retentionSetCommand } from "./retention-set.ts";
import { retentionShowCommand } from "./retention-show.ts";
import { usersCreateCommand } from "./users-create.ts";

/** Every `svc` command, in the order `--help` lists them. */
export const COMMANDS: Command[] = [
  setupCommand,
  accessCommand,
  orgsCreateCommand,
  projectsCreateCommand,
  branchesCreateCommand,
  branchesListCommand,
  branchesArchiveCommand,
  usersCreateCommand,
  patsCreateCommand,
  patsListCommand,
  patsRevokeCommand,
  membersAddCommand,
  keysRotateCommand,
  keysShowCommand,
  retentionShowCommand,
  retentionSetCommand,
  migrateCommand,
];
