import type { IDEMPOTENCY_KEY_SCOPES } from "../contracts/trigger.ts";

/** What an idempotency key is unique to: the run that triggered, its attempt, or nothing (global). */
export type IdempotencyKeyScope = (typeof IDEMPOTENCY_KEY_SCOPES)[number];

/**
 * What a running task receives besides its payload (`ctx`, Trigger.dev's TaskRunContext in the
 * parts svc has: no `machine`, `deployment`, or the organization's and project's names).
 */
export interface TaskContext {
  run: {
    id: string;
    tags: string[];
    isTest: boolean;
    createdAt: Date;
    /** The idempotency key the run was triggered with, as its user gave it (not the hash the SDK sends). */
    idempotencyKey?: string;
    /** What that key was unique to, when the trigger said (idempotencyKeys.create's `scope`). */
    idempotencyKeyScope?: IdempotencyKeyScope;
    maxAttempts?: number;
    /** The worker's version (a hash of its task files unless WORKER_VERSION is set). */
    version?: string;
    /** The run's maxDuration in seconds (the trigger's, else the task's). */
    maxDuration?: number;
  };
  /**
   * `number`: 1 for the first attempt; a resume after a wait keeps it. `startedAt`: when this
   * execution of the attempt started (a resumed run replays its attempt in a new execution).
   */
  attempt: { number: number; startedAt: Date };
  task: { id: string; filePath?: string };
  queue: { name: string };
  environment: { id: string; slug: string; type: string; branchName?: string };
  project: { id: string; ref: string };
  organization: { id: string };
  batch?: { id: string };
}
