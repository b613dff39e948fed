// `pnpm svc …`: the operator CLI. Provisions organisations, projects, branches, users, PATs and keys.
import { runCli } from "./run.ts";

process.exitCode = await runCli(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text + "\n"),
  stderr: (text) => process.stderr.write(text + "\n"),
});
