import { task } from "@svc/runtime";

/** The quick-start task: trigger it with curl or @trigger.dev/sdk and read its output. */
export const helloWorld = task({
  id: "hello-world",
  retry: { maxAttempts: 3 },
  run: async (payload: { name?: string }, { ctx }) => {
    return { greeting: `Hello, ${payload?.name ?? "world"}!`, runId: ctx.run.id, attempt: ctx.attempt.number };
  },
});
