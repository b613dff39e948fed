import { spawn } from "node:child_process";
import { join } from "node:path";
import type { DocBlock } from "./blocks.ts";
import { ROOT, Scratch } from "./scratch.ts";

const TSC = join(ROOT, "node_modules/typescript/bin/tsc");

/**
 * Typechecks every `ts test`, `ts task` and `ts check` block with the repository's compiler
 * options, in one compiler run. Each block is its own module (its prelude appended, where
 * declarations are hoisted anyway, so that line numbers stay the block's). Returns the errors,
 * each pointing at its line in the markdown file; empty when every block compiles.
 */
export async function typecheckBlocks(blocks: DocBlock[], scratch: Scratch): Promise<string[]> {
  if (blocks.length === 0) return [];
  const byFile = new Map<string, DocBlock>();
  for (const block of blocks) {
    const name = Scratch.fileName(block);
    byFile.set(name, block);
    scratch.write("check", name, `${block.code}\n${block.prelude ?? ""}\nexport {};\n`);
  }
  // A backend that completes tokens in its own transaction depends on @svc/worker, which the
  // example project does not: its snippet is typechecked against the package's sources.
  const paths = { "@svc/worker": [join(ROOT, "packages/worker/src/index.ts")] };
  scratch.write("check", "tsconfig.json", JSON.stringify({ extends: join(ROOT, "tsconfig.base.json"), compilerOptions: { paths }, include: ["*.ts"] }));
  const output = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [TSC, "-p", join(scratch.dir, "check", "tsconfig.json"), "--pretty", "false"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    child.stdout.on("data", (c: Buffer) => (text += c.toString()));
    child.stderr.on("data", (c: Buffer) => (text += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, text }));
  });
  if (output.code === 0) return [];
  const errors = output.text
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => {
      const match = /([^/\s]+\.ts)\((\d+),(\d+)\): (.*)$/.exec(line);
      const block = match && byFile.get(match[1]!);
      if (!match || !block) return line;
      return `${block.doc}:${block.line + Number(match[2])}:${match[3]}: ${match[4]}`;
    });
  return errors.length ? errors : [`tsc exited with ${output.code}`];
}
