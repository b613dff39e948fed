import { randomBytes } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { CRASH_FIXTURE, spawnApi, spawnWorker, type ServiceProcess } from "./processes.ts";

// The API and worker processes as operators start them, with a DATABASE_URL that is wrong: a
// database that does not exist or a user the server refuses ends the process at once with one
// sentence saying what to do (no stack trace); a server that does not answer is waited for, and
// the sentence says so.

/** The machine's Postgres with another database or user. */
function withUrl(change: (url: URL) => void): string {
  const url = new URL(inject("adminUrl"));
  change(url);
  return url.toString();
}

/** Resolves once the process has written `text` (stdout or stderr). */
function printed(proc: ServiceProcess, text: string): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!proc.output().includes(text)) return;
      proc.child.stdout!.off("data", check);
      proc.child.stderr!.off("data", check);
      resolve();
    };
    proc.child.stdout!.on("data", check);
    proc.child.stderr!.on("data", check);
    check();
  });
}

/** Awaits the process's exit, which must come before it says it started. */
async function exitCode(proc: ServiceProcess): Promise<number | string> {
  await expect(proc.ready).rejects.toThrow(/exited early/);
  return proc.exited;
}

const STACK_FRAME = /\n\s+at /;

describe("a process whose DATABASE_URL names a database that does not exist", () => {
  const database = `svc_missing_${randomBytes(4).toString("hex")}`;
  const url = withUrl((u) => (u.pathname = `/${database}`));
  const sentence = `database \\"${database}\\" does not exist on`;

  it("the API exits 1, saying how to create it", async () => {
    const api = spawnApi(url, await freePort());
    expect(await exitCode(api)).toBe(1);
    expect(api.output()).toContain(sentence);
    expect(api.output()).toContain(`create it with \`createdb -h`);
    expect(api.output()).not.toMatch(STACK_FRAME);
  });

  it("the worker exits 1, saying how to create it", async () => {
    const worker = spawnWorker(url, "", CRASH_FIXTURE);
    expect(await exitCode(worker)).toBe(1);
    expect(worker.output()).toContain(sentence);
    expect(worker.output()).not.toMatch(STACK_FRAME);
  });
});

describe("a process whose DATABASE_URL names a user the server refuses", () => {
  it("the worker exits 1, saying the user was refused, without the password", async () => {
    const url = withUrl((u) => {
      u.username = "svc_no_such_role";
      u.password = "hunter2-secret";
    });
    const worker = spawnWorker(url, "", CRASH_FIXTURE);
    expect(await exitCode(worker)).toBe(1);
    expect(worker.output()).toContain(`refused user \\"svc_no_such_role\\"`);
    expect(worker.output()).not.toContain("hunter2");
    expect(worker.output()).not.toMatch(STACK_FRAME);
  });
});

describe("a process whose Postgres does not answer", () => {
  it("the API keeps waiting, saying it cannot reach Postgres and what to do", async () => {
    const port = await freePort();
    const api = spawnApi(`postgres://postgres:hunter2-secret@127.0.0.1:${port}/postgres`, await freePort());
    api.ready.catch(() => {}); // it never gets there: it is killed below
    try {
      await printed(api, `cannot reach Postgres at 127.0.0.1:${port} (connection refused): is it running?`);
      expect(api.child.exitCode).toBeNull();
      expect(api.output()).toContain('"retrying":true');
      expect(api.output()).not.toContain("hunter2");
    } finally {
      api.child.kill("SIGKILL");
      await api.exited;
    }
  });
});
