#!/usr/bin/env node
// `svc`: see svc.ts.
import { runSvc } from "./svc.ts";

// A reader that stops early (`svc keys show | head -3`) is not a failure of ours: stop quietly.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(typeof process.exitCode === "number" ? process.exitCode : 0);
});

const result = await runSvc(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text + "\n"),
  stderr: (text) => process.stderr.write(text + "\n"),
});
if (result !== "serving") process.exitCode = result;
