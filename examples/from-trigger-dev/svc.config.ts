import { defineConfig } from "@svc/runtime";

// Replaces trigger.config.ts: the worker imports every task file in these folders.
export default defineConfig({ dirs: ["./src/tasks"] });
