export * from "./trigger.ts";
