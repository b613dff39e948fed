import { requireExecution } from "./run-context.ts";
import { runInsideStep } from "./step-scope.ts";

/**
 * A memoised durable step for side effects between waits: `fn` runs once, its result is recorded,
 * and every replay of the run returns the recorded result without calling `fn` again.
 * The result must be JSON/superjson-serialisable. A step that throws is not recorded.
 * `fn` may not make durable calls itself (waits, steps, triggerAndWait): they go next to it.
 *
 * @example
 * const charge = await step.run("charge-card", () => stripe.charges.create({ amount: 100 }));
 * await wait.for({ hours: 1 });
 * await step.run("send-receipt", () => email.send(charge.receipt_url));
 */
export const step = {
  run<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
    if (!name || typeof name !== "string") throw new Error("step.run(): a step name is required");
    // Checked before fn runs: recording the step afterwards would fail with the side effect done.
    if (name.includes("\u0000")) throw new Error("step.run(): a step name cannot contain a NUL character");
    const execution = requireExecution("step.run");
    return execution.runStep(name, () => runInsideStep(execution, `step.run("${name}")`, fn));
  },
};
