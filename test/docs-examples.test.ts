import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { extractBlocks, type DocBlock } from "./docs-examples/blocks.ts";
import { bashSteps } from "./docs-examples/bash-steps.ts";
import { startLiveSvc, type LiveSvc } from "./docs-examples/live-svc.ts";
import { runDoc, type DocRun } from "./docs-examples/run-doc.ts";
import { CLI_MAIN } from "./docs-examples/run-bash.ts";
import { ROOT, Scratch } from "./docs-examples/scratch.ts";
import { typecheckBlocks } from "./docs-examples/typecheck.ts";

// Every runnable example in the docs runs here against a live svc (an API and a worker process
// on a database of this file's own), so an example cannot rot. How blocks are marked and checked:
// docs/README.md#how-the-examples-are-tested and test/docs-examples/blocks.ts.

/** The docs a reader follows: the README, every guide under docs/, the benchmarks' README. */
const DOCS = ["README.md", "bench/README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)];
const blocksOf = new Map<string, DocBlock[]>(DOCS.map((doc) => [doc, extractBlocks(readFileSync(join(ROOT, doc), "utf8"), doc)]));
const allBlocks = [...blocksOf.values()].flat();

let scratch: Scratch;
let live: LiveSvc;
let typecheck: Promise<string[]>;
const ran = new Map<string, DocRun>();

beforeAll(async () => {
  scratch = new Scratch();
  // The worker loads the docs' task blocks besides the example's tasks.
  for (const block of allBlocks.filter((b) => b.kind === "task")) scratch.write("tasks", Scratch.fileName(block), `${block.code}\n`);
  typecheck = typecheckBlocks(allBlocks.filter((b) => ["test", "task", "check"].includes(b.kind) && ["ts", "typescript"].includes(b.lang)), scratch);
  typecheck.catch(() => {}); // awaited in its test
  live = await startLiveSvc(scratch.configPath);
}, 60_000);

afterAll(async () => {
  await typecheck?.catch(() => {});
  await live?.close();
  scratch?.close();
  if (ran.size) console.log(`docs examples run: ${[...ran].map(([doc, r]) => `${doc} ${r.bashSteps} bash steps in ${r.bashBlocks} blocks, ${r.tsBlocks} ts blocks in ${(r.ms / 1000).toFixed(0)} s`).join("; ")}`);
});

describe("the docs' examples", () => {
  // One tsc over every block: ~20 s alone, more on a loaded machine.
  it("every TypeScript block compiles", async () => {
    expect(await typecheck).toEqual([]);
  }, 180_000);

  it("every block that shows a repository file shows it as it is", () => {
    for (const block of allBlocks.filter((b) => b.kind === "file")) {
      const path = join(ROOT, block.file!);
      expect(existsSync(path), `${block.doc}:${block.line}: ${block.file} does not exist`).toBe(true);
      expect(`${block.code}\n`, `${block.doc}:${block.line} shows ${block.file} other than it is`).toBe(readFileSync(path, "utf8"));
    }
  });

  it("every TypeScript block is run, loaded, typechecked or a repository file; every curl is run", () => {
    const unchecked = allBlocks.filter(
      (b) =>
        (["ts", "typescript"].includes(b.lang) && b.kind === "shown") ||
        (["bash", "sh", "shell"].includes(b.lang) && b.kind === "shown" && /\bcurl\s/.test(b.code)),
    );
    expect(unchecked.map((b) => `${b.doc}:${b.line} (${b.lang})`)).toEqual([]);
  });

  it("name the secret key SERVICE_SECRET_KEY and the API's URL SERVICE_API_URL", () => {
    const offending: string[] = [];
    for (const doc of DOCS) {
      readFileSync(join(ROOT, doc), "utf8")
        .split("\n")
        .forEach((line, i) => {
          if (/\bSVC_KEY\b|\bSVC_SECRET_KEY\b|\$KEY\b|\$\{KEY\}|\$SVC\b/.test(line)) offending.push(`${doc}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(offending).toEqual([]);
  });

  it("link only to files that exist", () => {
    const broken: string[] = [];
    for (const doc of DOCS) {
      const text = readFileSync(join(ROOT, doc), "utf8").replace(/```[\s\S]*?```/g, "");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:|#)/.test(target!)) continue;
        const path = relative(ROOT, join(ROOT, dirname(doc), target!.split("#")[0]!));
        if (!existsSync(join(ROOT, path))) broken.push(`${doc}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("`pnpm svc` is the svc command the examples run (they call it without pnpm's start-up)", () => {
    const scripts = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
    expect(scripts.svc).toBe(`node --import tsx ${relative(ROOT, CLI_MAIN)}`);
  });

  // The docs use names of their own (tags, keys, session ids), so they run side by side. A doc of
  // many CLI calls (each a node process) takes ~40 s alone and passed 300 s in CI on two cores
  // busy with the other test files; a doc out of time names its slowest steps.
  for (const doc of DOCS) {
    const runnable = blocksOf.get(doc)!.filter((b) => b.kind === "test");
    if (runnable.length === 0) continue;
    it.concurrent(`${doc}: every runnable example works against a live svc`, async () => {
      ran.set(doc, await runDoc(blocksOf.get(doc)!, live, scratch, { budgetMs: 540_000 }));
    }, 600_000);
  }
});

describe("the docs' example runner", () => {
  const doc = (markdown: string) => extractBlocks(markdown, "runner-test.md");
  const fails = async (markdown: string) => {
    try {
      await runDoc(doc(markdown), live, scratch, { readTimeoutMs: 1_000 });
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error("the broken example passed");
  };

  it("fails a curl whose URL curl cannot parse (filter[…] without -g: exit 3)", async () => {
    const message = await fails(['```bash test', 'curl -s "$SERVICE_API_URL/api/v1/waitpoints/tokens?filter[status]=WAITING" -H "Authorization: Bearer $SERVICE_SECRET_KEY"', "```"].join("\n"));
    expect(message).toContain("exit 3");
  });

  it("fails a request the API answers with an error, at once even for a read", async () => {
    const started = Date.now();
    const message = await fails(['```bash test', 'curl -s "$SERVICE_API_URL/api/v3/runs/run_doesnotexist" -H "Authorization: Bearer $SERVICE_SECRET_KEY"', "```"].join("\n"));
    expect(message).toContain("404");
    expect(message).toContain("Run not found");
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("fails an example that triggers a task no worker has (svc queues such runs without error)", async () => {
    const message = await fails(
      ['```bash test', 'curl -s -X POST "$SERVICE_API_URL/api/v1/tasks/nightly-report/trigger" -H "Authorization: Bearer $SERVICE_SECRET_KEY" -H "Content-Type: application/json" -d \'{"payload":{}}\'', '# {"id":"run_…","isCached":false}', "```"].join("\n"),
    );
    expect(message).toContain(`"nightly-report", a task no worker has`);
  });

  it("fails a step that prints something other than the doc shows, after retrying a read", async () => {
    const message = await fails(
      ['```bash test', 'curl -s "$SERVICE_API_URL/api/v1/timezones?excludeUtc=true"', '# {"timezones":["UTC",…]}', "```"].join("\n"),
    );
    expect(message).toContain("printed something other than the doc shows");
  });

  it("accepts a step whose output matches, and carries its variables to the next block", async () => {
    const result = await runDoc(
      doc(
        [
          '```bash test',
          'RUN_ID=$(curl -s -X POST "$SERVICE_API_URL/api/v1/tasks/hello-world/trigger" \\',
          '  -H "Authorization: Bearer $SERVICE_SECRET_KEY" -H "Content-Type: application/json" \\',
          `  -d '{"payload":{"name":"runner"}}' | grep -o 'run_[a-z0-9]*')`,
          "```",
          "",
          '```bash test',
          'curl -s "$SERVICE_API_URL/api/v3/runs/$RUN_ID" -H "Authorization: Bearer $SERVICE_SECRET_KEY"',
          '# {"id":"run_…","status":"COMPLETED",…,"output":{"greeting":"Hello, runner!",…}}',
          "```",
        ].join("\n"),
      ),
      live,
      scratch,
    );
    expect(result).toEqual({ bashBlocks: 2, bashSteps: 2, tsBlocks: 0, ms: expect.any(Number) });
  });

  it("stops a doc past its time before its next step and names where the time went", async () => {
    let message = "";
    await runDoc(doc(["```bash test", "sleep 0.3", "", "echo never", "```"].join("\n")), live, scratch, { budgetMs: 100 }).catch((e: Error) => (message = e.message));
    expect(message).toMatch(/^runner-test\.md:4: the doc's examples ran past their 0\.1 s: 1 steps in 0\.\d s; the slowest: runner-test\.md:2 \d{3} ms$/);
  });

  it("fails a TypeScript example that throws (the client's NotFoundError) or prints other than shown", async () => {
    const missing = await fails(['```ts test', 'import { runs } from "@svc/runtime";', 'await runs.retrieve("run_doesnotexist");', "```"].join("\n"));
    expect(missing).toContain("NotFoundError");
    const other = await fails(['```ts test', 'console.log({ a: 1 }); // → { a: 2 }', "```"].join("\n"));
    expect(other).toContain("printed something other than the doc shows");
  });
});

describe("a bash block's steps", () => {
  it("joins continued lines and takes the comments right after a command as its output", () => {
    const [block] = extractBlocks(
      ['```bash test', "# prose before", 'A=$(curl -s "x" |', "  grep -o y)", "curl -s -X POST x \\", "  -d '{\"a\":", "1}'", '# {"ok":true}', "", "# more prose", 'curl -s -G x --data-urlencode "a=b"', "```"].join("\n"),
      "t.md",
    );
    expect(bashSteps(block!)).toEqual([
      { line: 3, command: 'A=$(curl -s "x" |\n  grep -o y)', expected: [], read: true },
      { line: 5, command: "curl -s -X POST x \\\n  -d '{\"a\":\n1}'", expected: ['{"ok":true}'], read: false },
      { line: 11, command: 'curl -s -G x --data-urlencode "a=b"', expected: [], read: true },
    ]);
  });
});
