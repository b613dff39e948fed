// The Trigger.dev project's config, as it was before the port (svc.config.ts replaces it).
import { defineConfig } from "@trigger.dev/sdk";

export default defineConfig({
  project: "proj_example",
  dirs: ["./original"],
  maxDuration: 300,
});
