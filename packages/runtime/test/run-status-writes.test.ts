// Run status changes have one home: every TypeScript write of runs.status lives in
// packages/runtime/src/engine/runs/, each transition module's guard and target agree with the
// transition table, and the SQL-side transitions (svc_complete_waitpoint's and svc_offer_at_commit's offers) are ones the
// table allows. Source scans, no database.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { canTransition, isRunStatus, type Transition } from "../src/engine/runs/statuses.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const HOME = "packages/runtime/src/engine/runs/";
const TRANSITIONS_DIR = join(root, HOME, "transitions");

/**
 * Files outside HOME allowed to write runs.status, each with its reason. Empty: keep it so (a new
 * entry needs a reason a reviewer accepts).
 */
const ALLOWED: Record<string, string> = {};

/**
 * Transition modules whose transition a run is inserted in, not updated into, and the file with
 * that INSERT: a trigger inserts a run already offered to a worker (QUEUED → EXECUTING in one step).
 */
const WRITTEN_BY_INSERT: Record<string, string> = { "offer-start.ts": "insert-runs.ts" };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" || e.name === "test" ? [] : sourceFiles(path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The SET clauses of `UPDATE runs [alias] SET …` statements in a text (up to FROM/WHERE/RETURNING or the literal's end). */
function runSetClauses(text: string): string[] {
  const re = /\bUPDATE\s+runs(?:\s+(?!SET\b)\w+)?\s+SET\b([\s\S]*?)(?=\bFROM\b|\bWHERE\b|\bRETURNING\b|`|$)/gi;
  return [...text.matchAll(re)].map((m) => m[1]!);
}

/**
 * Whether a SET clause writes runs.status: an unqualified `status =` (SET targets are never
 * qualified; `prev.status = …` inside an expression is a read), or an interpolated fragment, which
 * could hide one.
 */
function writesStatus(setClause: string): boolean {
  return /(?<![.\w])status\s*=/i.test(setClause) || setClause.includes("${");
}

function statusWriters(files: { path: string; text: string }[]): string[] {
  return files.filter((f) => runSetClauses(f.text).some(writesStatus)).map((f) => f.path);
}

describe("the scanner", () => {
  it("finds the forms status writes take, and only those", () => {
    const found = (sql: string) => runSetClauses(sql).some(writesStatus);
    expect(found("UPDATE runs SET status = 'QUEUED' WHERE id = $1")).toBe(true);
    expect(found("UPDATE runs r SET status = i.status, updated_at = $2 FROM input i")).toBe(true);
    expect(found("UPDATE runs r\n  SET updated_at = $2, status = $3 WHERE r.id = $1")).toBe(true);
    expect(found("UPDATE runs r SET ${set}, claim_token = $2 WHERE r.id = $1")).toBe(true);
    expect(found("UPDATE runs SET lease_expires_at = NULL WHERE NOT (status = 'EXECUTING')")).toBe(false);
    expect(found("UPDATE runs r SET attempt_number = CASE WHEN prev.status = 'EXECUTING' THEN 1 END FROM prev")).toBe(false);
    expect(found("UPDATE run_attempts SET status = 'CRASHED'")).toBe(false);
    expect(found("UPDATE waitpoints SET status = 'COMPLETED'")).toBe(false);
  });
});

describe("run status writes", () => {
  it(`live only in ${HOME}`, () => {
    const files = readdirSync(join(root, "packages")).flatMap((p) => {
      const src = join(root, "packages", p, "src");
      try {
        return sourceFiles(src);
      } catch {
        return [];
      }
    });
    expect(files.length).toBeGreaterThan(50);
    const writers = statusWriters(files.map((path) => ({ path: relative(root, path).split(sep).join("/"), text: readFileSync(path, "utf8") })));
    expect(writers.length).toBeGreaterThan(0);
    expect(writers.filter((path) => !path.startsWith(HOME) && !(path in ALLOWED))).toEqual([]);
  });

  it("in the transition modules, take their guard and target from declared transitions the table allows", async () => {
    const modules = readdirSync(TRANSITIONS_DIR).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));
    expect(modules.length).toBeGreaterThan(5);
    for (const file of modules) {
      const exports: Record<string, unknown> = await import(join(TRANSITIONS_DIR, file));
      const declared = Object.values(exports)
        .flatMap((v) => (Array.isArray(v) ? v : [v]))
        .filter((v): v is Transition => typeof v === "object" && v !== null && "from" in v && "to" in v);
      expect(declared.length, `${file} declares its transitions`).toBeGreaterThan(0);
      for (const t of declared) {
        expect(isRunStatus(t.to), `${file}: ${t.to}`).toBe(true);
        for (const from of t.from) expect(canTransition(from, t.to), `${file}: ${from} -> ${t.to}`).toBe(true);
      }
      const text = readFileSync(join(TRANSITIONS_DIR, file), "utf8");
      if (file in WRITTEN_BY_INSERT) {
        // Its run is inserted already in the transition's target: the INSERT's status is the declared `to`.
        const insert = readFileSync(join(root, HOME, WRITTEN_BY_INSERT[file]!), "utf8");
        expect(insert, file).toMatch(/INSERT INTO runs[\s\S]*\$\{OFFER_START\.to\}/);
        continue;
      }
      const sets = runSetClauses(text).filter(writesStatus);
      expect(sets.length, `${file} writes runs.status`).toBeGreaterThan(0);
      // No hard-coded target (`status = 'X'`): it is a declared transition's `to`, or (finish.ts)
      // the input row's status, checked against FINISH_ENDINGS by the caller.
      for (const set of sets) expect(set, file).not.toMatch(/(?<![.\w])status\s*=\s*'[A-Z_]/i);
      // The guard is built from the declaration.
      expect(text, file).toMatch(/\$\{statusGuard\(/);
    }
  });

  it("the two SQL-side transitions, svc_complete_waitpoint's resume offer (WAITING → EXECUTING) and svc_offer_at_commit's start offer (QUEUED → EXECUTING), are allowed by the table", () => {
    const functions = join(root, "packages/runtime/sql/functions");
    const writers = readdirSync(functions).filter((f) => runSetClauses(readFileSync(join(functions, f), "utf8")).some(writesStatus));
    expect(writers.sort()).toEqual(["svc_complete_waitpoint.sql", "svc_offer_at_commit.sql"]);
    const sql = readFileSync(join(functions, "svc_complete_waitpoint.sql"), "utf8");
    const marked = /marked AS \(\s*UPDATE runs r SET([\s\S]*?)RETURNING/.exec(sql)?.[1] ?? "";
    expect(marked).toMatch(/status = CASE WHEN chosen\.id IS NULL THEN r\.status ELSE 'EXECUTING' END/);
    expect(marked).toMatch(/WHERE r\.id = waiting\.id AND r\.status = 'WAITING'\s*$/);
    expect(canTransition("WAITING", "EXECUTING")).toBe(true);
    // The start offer made at COMMIT: the same transition as a trigger's INSERT (offer-start.ts), guarded.
    const atCommit = readFileSync(join(functions, "svc_offer_at_commit.sql"), "utf8");
    const offer = /UPDATE runs r SET([\s\S]*?)RETURNING/.exec(atCommit)?.[1] ?? "";
    expect(offer).toMatch(/^\s*status = 'EXECUTING',/);
    expect(offer).toMatch(/WHERE r\.id = NEW\.id AND r\.environment_id = NEW\.environment_id AND r\.status = 'QUEUED'/);
    expect(canTransition("QUEUED", "EXECUTING")).toBe(true);
  });
});
