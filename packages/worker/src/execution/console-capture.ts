import { formatWithOptions } from "node:util";
import { currentExecution, runLogRecord, type LogLevel } from "@svc/runtime/sdk";

/** The console methods task code logs with, and the level each line gets. */
const METHODS = { log: "log", info: "info", warn: "warn", error: "error", debug: "debug", trace: "debug" } as const satisfies Record<string, LogLevel>;
type Method = keyof typeof METHODS;

/**
 * `console` belongs to the process, so its capture does too: installed while at least one worker
 * of the process is started (tests run several), the originals put back when the last stops.
 */
const installed: { count: number; originals: Partial<Record<Method, (...args: unknown[]) => void>>; inside: boolean } = { count: 0, originals: {}, inside: false };

/**
 * Captures `console.*` inside runs: a line task code prints while it runs goes to its execution's
 * log sink (the worker's log and the run's stored log, with the run's id) instead of stdout, as
 * `logger.*` lines do. Outside a run (module top level, the worker itself) the console is
 * untouched. Returns the function that releases this capture.
 */
export function captureConsole(): () => void {
  if (installed.count++ === 0) {
    for (const method of Object.keys(METHODS) as Method[]) {
      const original = console[method] as (...args: unknown[]) => void;
      installed.originals[method] = original;
      console[method] = function captured(this: Console, ...args: unknown[]) {
        const execution = currentExecution();
        // A sink that itself prints (the default consoleTaskLogs) must reach the real console.
        if (!execution || installed.inside) return original.apply(this, args);
        installed.inside = true;
        try {
          execution.logs.write(runLogRecord(execution, METHODS[method], formatWithOptions({ colors: false }, ...args), undefined, "console"));
        } finally {
          installed.inside = false;
        }
      };
    }
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--installed.count > 0) return;
    for (const [method, original] of Object.entries(installed.originals)) console[method as Method] = original;
    installed.originals = {};
  };
}
