#!/usr/bin/env node
// `svc`: see svc.ts.
import { runSvc } from "./svc.ts";

const result = await runSvc(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text + "\n"),
  stderr: (text) => process.stderr.write(text + "\n"),
});
if (result !== "serving") process.exitCode = result;
