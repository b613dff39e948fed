/**
 * The one place the worker writes `process.env`. Task code reads its environment's variables, and
 * the SERVICE_* settings that configure the SDK's API client, from `process.env`: that is the
 * contract task authors write against. One worker process serves one environment, so the process's
 * env is that environment's for every run. main.ts hands this the real `process.env`; nothing else
 * in the worker reads or writes it.
 */
export class TaskEnv {
  #applied = new Set<string>();

  constructor(private readonly target: Record<string, string | undefined>) {}

  /** The environment's variables as task code sees them: sets these, removes ones set earlier and now gone. */
  applyVariables(vars: Record<string, string>): void {
    for (const name of this.#applied) if (!(name in vars)) delete this.target[name];
    for (const [name, value] of Object.entries(vars)) this.target[name] = value;
    this.#applied = new Set(Object.keys(vars));
  }

  /** Settings for the SDK client in task code (SERVICE_SECRET_KEY …), unless the operator set them. */
  setDefaults(values: Record<string, string | null | undefined>): void {
    for (const [name, value] of Object.entries(values)) if (value !== undefined && value !== null) this.target[name] ??= value;
  }
}
