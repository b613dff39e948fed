import type { ApiCommand } from "./command.ts";
import { jsonInput } from "./json-input.ts";

export const tokensCompleteCommand: ApiCommand = {
  name: "tokens complete",
  positionals: ["token id"],
  description: "Complete a waitpoint token: the runs waiting on it resume, and wait.forToken returns the output (the first completion wins)",
  options: {
    output: { type: "string", value: "json", help: "what wait.forToken returns as its output, as JSON (default: none)" },
    "output-file": { type: "string", value: "file", help: "the output from a JSON file (- for standard input)" },
  },
  examples: [`svc tokens complete waitpoint_1234 --output '{"approved":true}'`],
  validate(args) {
    jsonInput(args, "output");
  },
  async run({ client }, args) {
    const tokenId = args.positionals[0]!;
    await client.waitpoints.completeToken(tokenId, jsonInput(args, "output"));
    return { json: { id: tokenId, success: true }, text: `Completed ${tokenId}: the runs waiting on it resume` };
  },
};
