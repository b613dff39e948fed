import { fileURLToPath } from "node:url";
import type { DocBlock } from "./blocks.ts";
import { runScript, type Ran } from "./run-bash.ts";
import { ROOT, Scratch } from "./scratch.ts";

const PRINT_EXPECTED = fileURLToPath(new URL("./print-expected.ts", import.meta.url));
const EXPECTATION = /^(.*?)console\.log\((.*)\);?\s*\/\/ → (.*)$/;

/**
 * A `ts test` block as the docs test runs it: `console.log(x); // → expected` lines check what
 * they print (print-expected.ts); everything else is the block as written.
 */
export function runnableSnippet(block: DocBlock): string {
  const lines = block.code.split("\n").map((line, i) => {
    const match = EXPECTATION.exec(line);
    if (match) return `${match[1]}printExpected(${JSON.stringify(match[3]!.trim())}, ${match[2]});`;
    if (line.includes("// →")) throw new Error(`${block.doc}:${block.line + 1 + i}: an expected-output comment (// →) must follow console.log(…) on its line`);
    return line;
  });
  return [`import { printExpected } from ${JSON.stringify(PRINT_EXPECTED)};`, ...lines, ""].join("\n");
}

/**
 * Runs a `ts test` block with tsx from the scratch folder (which resolves @svc/runtime), as if
 * started from the terminal the doc's shell steps ran in: it sees the variables they exported.
 * Fails on a non-zero exit.
 */
export async function runTsBlock(block: DocBlock, scratch: Scratch, env: NodeJS.ProcessEnv, stateFile: string, timeoutMs = 30_000): Promise<Ran> {
  const file = scratch.write("run", Scratch.fileName(block), runnableSnippet(block));
  const script = `if [ -f "$__SVC_STATE" ]; then source "$__SVC_STATE"; fi\nexec "$__SVC_NODE" --import tsx "$__SVC_FILE"`;
  const ran = await runScript(script, { ...env, __SVC_STATE: stateFile, __SVC_NODE: process.execPath, __SVC_FILE: file }, ROOT, timeoutMs);
  if (ran.code !== 0) {
    throw new Error(
      `${block.doc}:${block.line}: the TypeScript example failed (exit ${ran.code})\n${block.code}\n` +
        `stdout:\n  ${ran.stdout.trimEnd().replace(/\n/g, "\n  ")}\nstderr:\n  ${ran.stderr.trimEnd().replace(/\n/g, "\n  ")}`,
    );
  }
  return ran;
}
