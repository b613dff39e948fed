export * from "./entries.ts";
export * from "./step-keys.ts";
export * from "./ledger-store.ts";
export * from "./replay.ts";
export * from "./outcomes.ts";
export * from "./durable-execution.ts";
