// The operator commands (orgs, projects, users, pats, members, branches, keys), run by `svc`.
export { runCli, EXIT, type CliIo } from "./run.ts";
export { COMMANDS as OPERATOR_COMMANDS } from "./commands/index.ts";
export { ConfigError, readRuntimeFile, type RuntimeFile } from "./config.ts";
