export * from "./names.ts";
export * from "./variables.ts";
