import type { Clock } from "../clock.ts";
import type { TaskLogSink } from "./task-logs.ts";

/**
 * Where svc's replay model gives a Trigger.dev call another meaning than it has there. Each is
 * said in the TSDoc of the call and, at run time, once per worker process (ReplayNotices), when a
 * run first meets it. The texts are here, once, so the two say the same.
 */
export const REPLAY_NOTICES = {
  "init-per-execution":
    "init and middleware run again in every execution of a run: a run resumed after a wait replays its function from the top, so init's value is made anew and middleware's code after next() runs only in the execution that finishes the run.",
  "cleanup-at-wait":
    "cleanup runs at the end of every execution of a run, also when the run suspends at a wait (its memory is dropped then, and init runs again on resume), not once per attempt.",
  "on-wait-after-checkpoint":
    "onWait runs once the wait is recorded: when the wait suspends the run, the run is already WAITING (it may resume elsewhere while onWait runs) and durable calls made from onWait never settle.",
  "trigger-outside-step":
    "a trigger inside a run, outside step.run and without an idempotencyKey, triggers again every time the run is replayed after a wait; wrap it in step.run or give it an idempotencyKey.",
  "max-duration-per-execution":
    "maxDuration limits each execution of an attempt: a run resumed after a wait starts a fresh count (waiting does not count, replaying does).",
  "replayed-logs":
    "logger and console lines a resumed run logs again while it replays up to the wait it resumed from are marked replayed: true (the worker writes them at debug level) and are not stored with the run again.",
  "input-peek-live":
    "streams.input().peek() is live, not recorded: a run resumed after a wait replays its code from the top, and a peek on the way sees the values not received yet as they are now, which may differ from what the first execution saw; choose waits and steps by what wait() and once() return.",
  "writer-merge-order":
    "streams.writer()'s merge() stores chunks in the order they arrive, and a run resumed after a wait writes its chunks again: those already stored are skipped by their place in that order, so merged chunks written before a wait can be stored twice or left out when the replay's order differs. Write them in a fixed order (write(), pipe()) before a wait.",
} as const;

export type ReplayNoticeCode = keyof typeof REPLAY_NOTICES;

/** Says each replay notice once, as a warning in the task log (the worker's log). */
export class ReplayNotices {
  readonly #said = new Set<ReplayNoticeCode>();
  constructor(
    private readonly logs: TaskLogSink,
    private readonly clock: Clock,
  ) {}

  say(code: ReplayNoticeCode, run: { id: string; attempt: number; taskId: string }): void {
    if (this.#said.has(code)) return;
    this.#said.add(code);
    this.logs.write({ level: "warn", message: `svc: ${REPLAY_NOTICES[code]}`, at: this.clock.now(), run, notice: code });
  }

  /** Whether `code` was said (tests). */
  said(code: ReplayNoticeCode): boolean {
    return this.#said.has(code);
  }
}
