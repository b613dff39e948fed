import type { Writable } from "node:stream";
import PinoPretty from "pino-pretty";

/**
 * Where a child's stdout goes in `svc dev`: its JSON log lines as readable lines (time, level,
 * `api |` or `worker |`, the message and its fields), through pino-pretty; lines that are not JSON
 * (what task code prints) pass unchanged. `LOG_FORMAT=json` keeps the JSON lines as they are.
 */
export function devLogStream(name: string, env: NodeJS.ProcessEnv): Writable | undefined {
  if (env.LOG_FORMAT === "json") return undefined;
  return PinoPretty({
    colorize: Boolean(process.stdout.isTTY),
    ignore: "pid,hostname,service",
    translateTime: "SYS:HH:MM:ss.l",
    messageFormat: `${name.padEnd(6)} | {msg}`,
    destination: 1,
    sync: true,
  });
}
