import type { DocBlock } from "./blocks.ts";

/**
 * A `bash test` block as the steps a reader types one after another. A step is one command (its
 * lines joined by a trailing `\`, `|`, `&&`, `||` or an open quote or `$(`); comment lines right
 * after it are its expected output (expected-output.ts), comment lines anywhere else are prose.
 */
export interface BashStep {
  /** Line of the step's first command line in the markdown file (1-based). */
  line: number;
  command: string;
  /** Expected output, one entry per comment line; empty when the doc shows none. */
  expected: string[];
  /**
   * A read (a curl without a request body or a non-GET method): retried until it succeeds and
   * prints what the doc shows, since what it reads (a run's status, a token appearing) changes
   * asynchronously. Writes run once.
   */
  read: boolean;
}

interface ScanState {
  single: boolean;
  double: boolean;
  parens: number;
}

/** Advances the quote and `$(` state over one line. */
function scan(line: string, state: ScanState): void {
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (state.single) {
      if (c === "'") state.single = false;
      continue;
    }
    if (c === "\\") {
      i++;
      continue;
    }
    if (c === '"') state.double = !state.double;
    else if (c === "'" && !state.double) state.single = true;
    else if (c === "#" && !state.double && (i === 0 || /\s/.test(line[i - 1]!))) return; // a comment ends the line
    else if (c === "(" && line[i - 1] === "$") state.parens++;
    else if (c === ")" && state.parens > 0) state.parens--;
  }
}

function continues(line: string, state: ScanState): boolean {
  return state.single || state.double || state.parens > 0 || /(\\|\||&&)\s*$/.test(line);
}

const WRITE_METHOD = /(^|\s)(-X|--request)\s*(POST|PUT|PATCH|DELETE)\b/;
const BODY = /(^|\s)(-d|--data\S*|--json|-F|--form|-T|--upload-file)(\s|=|$)/;

function isRead(command: string): boolean {
  if (!/(^|[\s|(])curl\s/.test(command)) return false;
  if (WRITE_METHOD.test(command)) return false;
  return /(^|\s)(-G|--get)(\s|$)/.test(command) || !BODY.test(command);
}

export function bashSteps(block: DocBlock): BashStep[] {
  const lines = block.code.split("\n");
  const steps: BashStep[] = [];
  let current: { line: number; lines: string[]; expected: string[] } | null = null;
  let collectingOutput = false;
  const state: ScanState = { single: false, double: false, parens: 0 };
  const finish = () => {
    if (current) {
      const command = current.lines.join("\n");
      steps.push({ line: current.line, command, expected: current.expected, read: isRead(command) });
    }
    current = null;
    collectingOutput = false;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const docLine = block.line + 1 + i;
    const inCommand = current !== null && !collectingOutput;
    if (inCommand && continues(current!.lines[current!.lines.length - 1]!, state)) {
      current!.lines.push(line);
      scan(line, state);
      continue;
    }
    if (line.trim() === "") {
      finish();
      continue;
    }
    if (/^\s*#/.test(line)) {
      if (current && (inCommand || collectingOutput)) {
        collectingOutput = true;
        current.expected.push(line.replace(/^\s*#\s?/, ""));
      } else {
        finish();
      }
      continue;
    }
    finish();
    current = { line: docLine, lines: [line], expected: [] };
    scan(line, state);
  }
  if (state.single || state.double || state.parens > 0) throw new Error(`${block.doc}:${block.line}: the block ends inside a quote or $( … )`);
  finish();
  return steps;
}
