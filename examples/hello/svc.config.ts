import { defineConfig } from "@svc/runtime";

// The worker imports every .ts file in these folders and serves the tasks they export.
export default defineConfig({ dirs: ["./src/tasks"] });
