// The operator commands (orgs, projects, users, pats, members, branches, keys), run by `svc`.
export { runCli, EXIT, type CliIo } from "./run.ts";
