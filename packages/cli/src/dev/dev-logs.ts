import type { Writable } from "node:stream";
import PinoPretty from "pino-pretty";

/** Fields a run's lines carry that the line itself says (its prefix, its message): not repeated after it. */
const RUN_FIELDS = "runId,attempt,task,event,status,console";

/**
 * Where a child's stdout goes in `svc dev`: its JSON log lines as readable lines (time, level,
 * `api |` or `worker |`, the message and its fields), through pino-pretty; lines that are not JSON
 * pass unchanged. A run's lines (what its task code logs, and the worker's line per start, wait,
 * resume, failure and completion) start with the run's id: `worker | run_… | charging card`.
 * `LOG_FORMAT=json` keeps the JSON lines as they are.
 */
export function devLogStream(name: string, env: NodeJS.ProcessEnv): Writable | undefined {
  if (env.LOG_FORMAT === "json") return undefined;
  return PinoPretty({
    colorize: Boolean(process.stdout.isTTY),
    ignore: `pid,hostname,service,${RUN_FIELDS}`,
    translateTime: "SYS:HH:MM:ss.l",
    messageFormat: (log, messageKey) => devMessage(name, log, messageKey),
    singleLine: true,
    destination: 1,
    sync: true,
  });
}

/** `worker | run_… | message` for a run's lines, `worker | message` for the others. */
export function devMessage(name: string, log: Record<string, unknown>, messageKey: string): string {
  const runId = typeof log.runId === "string" ? `${log.runId} | ` : "";
  return `${name.padEnd(6)} | ${runId}${String(log[messageKey] ?? "")}`;
}
