export * from "./environments.ts";
export * from "./projects.ts";
export * from "./secret-box.ts";
export * from "./secret-keys.ts";
