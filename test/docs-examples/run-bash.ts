import { spawn } from "node:child_process";
import { join } from "node:path";
import type { BashStep } from "./bash-steps.ts";
import { matchesExpected } from "./expected-output.ts";
import { ROOT } from "./scratch.ts";

export const CLI_MAIN = join(ROOT, "packages/cli/src/main.ts");

export interface Ran {
  code: number | string;
  stdout: string;
  stderr: string;
}

/**
 * `curl` as the docs' examples get it: any HTTP status ≥ 400 fails the step (--fail-with-body,
 * exit 22, the body on stdout), as does every other curl error (exit 3 for a malformed URL, 7
 * when nothing listens). A step whose expected output starts with a status (`# 404 {…}`) gets
 * `<status> <body>` instead, and may expect an error.
 */
const CURL = `curl() { command curl --fail-with-body --silent --show-error "$@"; }`;
const CURL_WITH_STATUS = `curl() {
  local __svc_body __svc_code; __svc_body=$(mktemp)
  __svc_code=$(command curl --silent --show-error -o "$__svc_body" -w '%{http_code}' "$@") || { rm -f "$__svc_body"; return 1; }
  printf '%s %s\\n' "$__svc_code" "$(cat "$__svc_body")"; rm -f "$__svc_body"
}`;

/**
 * `svc …` (the command of @svc/cli: `npx svc` in a project, `pnpm svc` in svc's repository, where it
 * is `node --import tsx packages/cli/src/main.ts`) as that script runs it, without pnpm's or npx's
 * own start-up, which would double the time of every CLI step; docs-examples.test.ts checks once
 * that `pnpm svc` really is that script.
 */
const SVC = `svc() { "$__SVC_NODE" --import tsx "$__SVC_CLI" "$@"; }
pnpm() {
  if [ "\${1:-}" = "-s" ]; then shift; fi
  if [ "\${1:-}" = "svc" ]; then shift; svc "$@"; else command pnpm "$@"; fi
}
npx() { if [ "\${1:-}" = "svc" ]; then shift; svc "$@"; else command npx "$@"; fi; }`;

/**
 * The variables a step defines carry over to the next steps and blocks of the same doc, as in one
 * terminal: each step sources the state file, and writes it back with every variable it did not
 * start with (bash's own excepted).
 */
const STATE = `
__svc_before=$(compgen -v)
if [ -f "$__SVC_STATE" ]; then source "$__SVC_STATE"; fi
__svc_save() {
  local __svc_v
  for __svc_v in $(compgen -v); do
    case "$__svc_v" in __svc_*|BASH*|_|PIPESTATUS|FUNCNAME|LINENO|RANDOM|SRANDOM|SECONDS|EPOCH*|COLUMNS|LINES|OPTIND|OPTARG|OPTERR|GROUPS|DIRSTACK|HIST*|PWD|OLDPWD|SHLVL|IFS|PS1|PS2|PS4|COMP_*|MAPFILE|REPLY) continue ;; esac
    if ! grep -qxF -- "$__svc_v" <<<"$__svc_before"; then declare -p "$__svc_v"; fi
  done > "$__SVC_STATE.next"
  mv "$__SVC_STATE.next" "$__SVC_STATE"
}`;

export function stepScript(step: BashStep): string {
  const withStatus = /^\d{3}(\s|$)/.test(step.expected[0] ?? "");
  return ["set -euo pipefail", STATE, withStatus ? CURL_WITH_STATUS : CURL, SVC, step.command, "__svc_save", ""].join("\n");
}

/** Runs `script` with bash; the result whatever the exit code (killed after `timeoutMs`). */
export function runScript(script: string, env: NodeJS.ProcessEnv, cwd: string, timeoutMs: number): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? -1, stdout, stderr });
    });
  });
}

export interface StepContext {
  /** Where the step was written: `docs/x.md:12`. */
  where: string;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The state file shared by the doc's steps. */
  stateFile: string;
  /** How long a read may keep failing or printing something else. */
  readTimeoutMs: number;
}

function explain(ctx: StepContext, step: BashStep, ran: Ran, problem: string): Error {
  const expected = step.expected.length ? `\nexpected output:\n  ${step.expected.join("\n  ")}` : "";
  return new Error(
    `${ctx.where}: ${problem}\n$ ${step.command.replace(/\n/g, "\n  ")}${expected}\n` +
      `exit: ${ran.code}\nstdout:\n  ${ran.stdout.trimEnd().replace(/\n/g, "\n  ")}\nstderr:\n  ${ran.stderr.trimEnd().replace(/\n/g, "\n  ")}`,
  );
}

/**
 * Runs one step; throws when it exits non-zero or prints something other than what the doc
 * shows. A read is retried until it passes or `readTimeoutMs` is up, unless curl itself failed
 * (a malformed URL or an HTTP error does not get better by asking again).
 */
export async function runStep(step: BashStep, ctx: StepContext): Promise<Ran> {
  const env = { ...ctx.env, __SVC_STATE: ctx.stateFile, __SVC_NODE: process.execPath, __SVC_CLI: CLI_MAIN };
  const deadline = Date.now() + ctx.readTimeoutMs;
  for (;;) {
    const ran = await runScript(stepScript(step), env, ctx.cwd, Math.max(ctx.readTimeoutMs, 30_000));
    const failed = ran.code !== 0;
    const mismatch = !failed && step.expected.length > 0 && !matchesExpected(ran.stdout, step.expected.join("\n"));
    if (!failed && !mismatch) return ran;
    const curlFailed = /curl: \(\d+\)/.test(ran.stderr);
    if (!step.read || curlFailed || Date.now() > deadline) {
      throw explain(ctx, step, ran, failed ? `the step failed (exit ${ran.code})` : "the step printed something other than the doc shows");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
