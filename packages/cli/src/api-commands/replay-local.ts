import { resolve } from "node:path";
import { consoleTaskLogs, findConfigFile, type TaskContext } from "@svc/runtime/sdk";
import { replayLocally, systemClock, type LocalReplayEnd, type LocalReplayEvent } from "@svc/runtime/engine";
import type { CommandContext, CommandResult } from "./command.ts";

/**
 * `svc runs replay <id> --local`: fetches the run and its ledger over the API, loads the project's
 * tasks as the worker does (svc.config.ts), and runs the run's task here against the ledger
 * (replayLocally): nothing is written, so it can be stepped through in a debugger.
 */
export async function replayLocal({ client, env }: CommandContext, runId: string, configOption: string | undefined): Promise<CommandResult> {
  const configPath = resolve(configOption ?? (env.SVC_CONFIG || findConfigFile(process.cwd()) || "svc.config.ts"));
  const [ledger, run] = await Promise.all([client.runs.ledger(runId), client.runs.retrieve(runId)]);
  const { loadTasks, registerTypeScriptLoader } = await import("@svc/worker");
  await registerTypeScriptLoader();
  const loaded = await loadTasks(configPath);
  const task = loaded.tasks.find((t) => t.id === ledger.taskIdentifier);
  if (!task) throw new Error(`task "${ledger.taskIdentifier}" of ${runId} is not among the tasks ${configPath} loads (${loaded.tasks.map((t) => t.id).join(", ") || "none"})`);
  const now = systemClock.now();
  const ctx: TaskContext = {
    run: { id: run.id, tags: run.tags, isTest: run.isTest, createdAt: run.createdAt, version: loaded.version, ...(run.idempotencyKey ? { idempotencyKey: run.idempotencyKey } : {}) },
    attempt: { number: Math.max(1, ledger.attemptNumber), startedAt: now },
    task: { id: task.id },
    queue: { name: task.queue?.name ?? `task/${task.id}` },
    environment: { id: "local", slug: "local", type: "DEVELOPMENT" },
    project: { id: "local", ref: "local" },
    organization: { id: "local" },
  };
  const { events, end } = await replayLocally({ task, ledger, payload: run.payload, ctx, clock: systemClock, logs: consoleTaskLogs });
  const recorded = ledger.entries.filter((e) => e.resolved).length;
  const text = [
    `Replayed ${runId} (task ${task.id}) in this process against its ledger (${recorded} recorded ${recorded === 1 ? "entry" : "entries"}); nothing was written`,
    ...events.map(describeEvent),
    describeEnd(end),
  ].join("\n");
  return { json: { runId, taskIdentifier: task.id, events: events.map(eventJson), end: endJson(end) }, text, exitCode: end.kind === "threw" ? 1 : 0 };
}

function show(value: unknown): string {
  if (value === undefined) return "undefined";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : show(error);
}

function describeEvent(event: LocalReplayEvent): string {
  switch (event.type) {
    case "replayed":
      return `  ${event.stepKey} ${event.kind}${event.target ? ` "${event.target}"` : ""}: recorded, not run`;
    case "executed":
      return `  ${event.stepKey} step "${event.name}": ran here, returned ${show(event.value)}`;
    case "threw":
      return `  ${event.stepKey} step "${event.name}": ran here, threw ${errorText(event.error)}`;
    case "not-written":
      return `  (not written: ${event.what})`;
  }
}

function describeEnd(end: LocalReplayEnd): string {
  if (end.kind === "returned") return `The task returned ${show(end.output)}`;
  if (end.kind === "threw") return `The task threw ${errorText(end.error)}`;
  return `Stopped${end.stepKey ? ` at ${end.stepKey}` : ""}: ${end.reason}`;
}

function eventJson(event: LocalReplayEvent) {
  return event.type === "threw" ? { ...event, error: errorText(event.error) } : event;
}

function endJson(end: LocalReplayEnd) {
  return end.kind === "threw" ? { kind: "threw", error: errorText(end.error) } : end;
}
