import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/**
 * Calls `gone` once whoever started this process has exited. `pnpm start` / `npm run dev` do not
 * pass a SIGTERM on: they kill the shell they ran us in and exit, which leaves us running. Whoever
 * started us is our parent, or the leader of our process group (pnpm, or the terminal's job); when
 * either is gone, we stop as if signalled (a drain, never the immediate stop of a second Ctrl-C).
 * Returns a function that stops watching.
 */
export function watchStarter(gone: () => void, intervalMs = 500): () => void {
  const parent = process.ppid;
  const leader = processGroupLeader();
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "EPERM";
    }
  };
  const timer = setInterval(() => {
    if (process.ppid !== parent || (leader !== null && leader !== process.pid && !alive(leader))) {
      clearInterval(timer);
      gone();
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** Our process group's id (its leader's pid), from /proc on Linux, else from ps; null if neither answers. */
function processGroupLeader(): number | null {
  try {
    // /proc/self/stat: "pid (comm) state ppid pgrp …"; comm may contain spaces, so split after ")".
    const fields = readFileSync("/proc/self/stat", "utf8").split(")").pop()!.trim().split(" ");
    return Number(fields[2]);
  } catch {
    try {
      return Number(execFileSync("ps", ["-o", "pgid=", "-p", String(process.pid)]).toString().trim()) || null;
    } catch {
      return null;
    }
  }
}
