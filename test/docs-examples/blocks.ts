/**
 * The fenced code blocks of a markdown file and what the docs test does with each, from the
 * fence's info string:
 *
 * - ```` ```bash test ````: run against the live svc, step by step (see bash-steps.ts);
 * - ```` ```ts test ````: a backend script, typechecked and run with tsx against the live svc;
 * - ```` ```ts task ````: task code, typechecked and loaded by the docs test's worker;
 * - ```` ```ts check ````: typechecked only (code that needs more than the docs test has);
 * - ```` ```ts file=<path> ````: must be exactly the repository file at <path>;
 * - anything else: shown, not run (output, JSON shapes, commands that start processes).
 *
 * An HTML comment `<!-- prelude: … -->` right before a `ts check` block holds declarations the
 * snippet assumes (`declare const orderId: string;`); it is appended when typechecking and not shown.
 */
export type BlockKind = "test" | "task" | "check" | "file" | "shown";

export interface DocBlock {
  /** The markdown file, relative to the repository root. */
  doc: string;
  /** Line of the opening fence (1-based). */
  line: number;
  lang: string;
  kind: BlockKind;
  /** For `file=` blocks: the repository file the block shows. */
  file?: string;
  code: string;
  prelude?: string;
}

const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;

function kindOf(words: string[]): { kind: BlockKind; file?: string } {
  const file = words.find((w) => w.startsWith("file="));
  if (file) return { kind: "file", file: file.slice("file=".length) };
  for (const kind of ["test", "task", "check"] as const) if (words.includes(kind)) return { kind };
  return { kind: "shown" };
}

/** The prelude comment ending on the line before `index`, if any. */
function preludeBefore(lines: string[], index: number): string | undefined {
  const end = index - 1;
  if (end < 0 || !lines[end]!.trim().endsWith("-->")) return undefined;
  let start = end;
  while (start >= 0 && !lines[start]!.includes("<!--")) start--;
  if (start < 0) return undefined;
  const text = lines.slice(start, end + 1).join("\n").trim();
  const match = /^<!--\s*prelude:([\s\S]*)-->$/.exec(text);
  return match ? match[1]!.trim() : undefined;
}

export function extractBlocks(markdown: string, doc: string): DocBlock[] {
  const lines = markdown.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, info] = open as unknown as [string, string, string, string];
    const words = info.trim().split(/\s+/).filter(Boolean);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = FENCE.exec(lines[j]!);
      if (close && close[2]!.startsWith(fence) && close[3]!.trim() === "") break;
      // Blocks inside list items are indented; their code is not.
      body.push(lines[j]!.startsWith(indent) ? lines[j]!.slice(indent.length) : lines[j]!.trimStart());
    }
    if (j === lines.length) throw new Error(`${doc}:${i + 1}: code block is never closed`);
    const { kind, file } = kindOf(words.slice(1));
    const prelude = preludeBefore(lines, i);
    blocks.push({ doc, line: i + 1, lang: words[0] ?? "", kind, ...(file ? { file } : {}), code: body.join("\n"), ...(prelude ? { prelude } : {}) });
    i = j;
  }
  return blocks;
}
