import type { TriggerOptions } from "@svc/runtime";
import { integerOption, listOption, stringOption, type ApiCommand, type CommandArgs } from "./command.ts";
import { runDetails } from "./format.ts";
import { jsonInput, jsonObjectInput } from "./json-input.ts";

function triggerOptions(args: CommandArgs): TriggerOptions {
  const options: TriggerOptions = {
    tags: listOption(args, "tag"),
    idempotencyKey: stringOption(args, "idempotency-key"),
    idempotencyKeyTTL: stringOption(args, "idempotency-key-ttl"),
    delay: stringOption(args, "delay"),
    ttl: stringOption(args, "ttl"),
    queue: stringOption(args, "queue"),
    concurrencyKey: stringOption(args, "concurrency-key"),
    maxAttempts: integerOption(args, "max-attempts", 1, 100),
    maxDuration: integerOption(args, "max-duration", 1, 31_536_000),
    metadata: jsonObjectInput(args, "metadata"),
    test: args.values.test === true ? true : undefined,
  };
  for (const key of Object.keys(options) as (keyof TriggerOptions)[]) if (options[key] === undefined) delete options[key];
  return options;
}

export const runsTriggerCommand: ApiCommand = {
  name: "runs trigger",
  positionals: ["task id"],
  description: "Trigger a run of a task (with --wait: wait until it has finished, print it, exit 1 unless it COMPLETED)",
  options: {
    payload: { type: "string", value: "json", help: "the payload, as JSON (default: no payload)" },
    "payload-file": { type: "string", value: "file", help: "the payload from a JSON file (- for standard input)" },
    tag: { type: "string", multiple: true, help: "tags of the run (up to 10)" },
    "idempotency-key": { type: "string", value: "key", help: "the same key within its TTL answers with the existing run" },
    "idempotency-key-ttl": { type: "string", value: "duration", help: "how long the key holds (30d by default)" },
    delay: { type: "string", value: "duration or date", help: "start later: 10m, or an ISO date-time" },
    ttl: { type: "string", value: "duration", help: "EXPIRED when not started within this long" },
    queue: { type: "string", value: "name", help: "the queue (the task's own by default)" },
    "concurrency-key": { type: "string", value: "key", help: "a copy of the queue's concurrency limit per key" },
    "max-attempts": { type: "string", value: "n", help: "overrides the task's retry.maxAttempts" },
    "max-duration": { type: "string", value: "seconds", help: "an attempt running longer is stopped" },
    metadata: { type: "string", value: "json object", help: "the run's metadata" },
    test: { type: "boolean", help: "mark it a test run" },
    wait: { type: "boolean", help: "wait until the run has finished (Ctrl-C stops waiting, not the run)" },
  },
  examples: [
    `svc runs trigger hello-world --payload '{"name":"Ada"}'`,
    `svc runs trigger hello-world --payload-file payload.json --tag user:42 --wait`,
    `echo '{"amount":42}' | svc runs trigger approval --payload-file - --json`,
  ],
  validate(args) {
    jsonInput(args, "payload");
    triggerOptions(args);
  },
  async run({ client }, args) {
    const taskId = args.positionals[0]!;
    const handle = await client.tasks.trigger(taskId, jsonInput(args, "payload"), triggerOptions(args));
    const triggered = `${handle.isCached ? "An existing run of" : "Triggered"} ${taskId}: ${handle.id}${handle.isCached ? " (its idempotency key matched)" : ""}`;
    if (args.values.wait !== true) {
      return { json: { id: handle.id, isCached: handle.isCached }, text: `${triggered}\n  svc runs show ${handle.id}` };
    }
    const run = await client.runs.poll(handle.id, { pollIntervalMs: 250 });
    return { json: run, text: `${triggered}\n${runDetails(run)}`, exitCode: run.status === "COMPLETED" ? 0 : 1 };
  },
};
