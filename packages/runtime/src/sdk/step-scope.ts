import { currentExecution, runInExecution, type RunExecution } from "./run-context.ts";

const INSIDE = Symbol("svc.inside-step");

/** The durable calls that take a position in the ledger (not allowed inside a step's function), by the name task code knows. */
const POSITIONED: ReadonlyMap<PropertyKey, string> = new Map<keyof RunExecution, string>([
  ["waitForToken", "wait.forToken()"], ["waitUntil", "wait.for()/wait.until()"], ["runStep", "step.run()"], ["createToken", "wait.createToken()"],
  ["triggerAndWait", "triggerAndWait()"], ["batchTriggerAndWait", "batchTriggerAndWait()"], ["waitForChannel", "session.in.wait()"],
  ["onceChannel", "session.in.once()"], ["peekChannel", "session.in.peek()"], ["continueSession", "session.endAndContinue()"], ["once", "a lifecycle hook"],
]);

/**
 * Runs `fn` (a step's function, retry.onThrow's) as `execution` seen from inside `what`: durable
 * calls that take a position in the ledger are refused with a clear error. A replay does not run
 * a recorded step's function, so the calls made inside it would be missing from the replay and
 * every later call would meet the record of another.
 */
export function runInsideStep<T>(execution: RunExecution, what: string, fn: () => T): T {
  const scoped = new Proxy(execution, {
    get(target, property) {
      if (property === INSIDE) return what;
      const call = POSITIONED.get(property);
      if (call) return () => Promise.reject(new Error(`${call} cannot be called inside ${what}: a replay does not run a recorded step's function, so durable calls (waits, steps, triggerAndWait, wait.createToken) go next to it, not in it`));
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return runInExecution(scoped, fn);
}

/** The step the current code runs inside (`step.run("name")`, `retry.onThrow()`), if any. */
export function currentStep(): string | undefined {
  return (currentExecution() as (RunExecution & { [INSIDE]?: string }) | undefined)?.[INSIDE];
}
