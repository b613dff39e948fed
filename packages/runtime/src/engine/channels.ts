/** Postgres NOTIFY channels svc uses (payloads in comments). */
export const CHANNELS = {
  /** Comma-separated run ids whose wait resolved: the resume fast path. */
  resume: "svc_resume",
  /**
   * An environment id: runs of its limited queues are ready to be claimed (a resume, a give-back):
   * every worker of the environment runs its claims (engine/runs/wake-workers.ts wakes starts).
   */
  runsReady: "svc_runs_ready",
  /** Prefix of a worker's own wake-up channel (+ its id): runs of the queues named (space-separated) are ready to be claimed. */
  wakePrefix: "svc_wake_",
  /** A run id that was canceled: its executing worker aborts it. */
  runCanceled: "svc_run_canceled",
  /** Something time-based was scheduled (delay, retry, timeout, schedule): timer loops re-plan. */
  timers: "svc_timers",
  /** Prefix of a worker's own channel (+ its id): resume offers, JSON (sent by the completion statement, see SEND_OFFERS). */
  offersPrefix: "svc_offers_",
  /** A secret key or environment changed (sent by a trigger, migration 0011): API replicas drop their key cache. */
  credentials: "svc_credentials",
  /** A record was appended to a session channel: JSON `{ e, k, io, seq, r? }` (engine/sessions/append-record.ts). */
  sessionRecords: "svc_session_records",
  /**
   * A run changed what a realtime subscriber sees, in an environment some API process watches:
   * JSON `[environmentId, runId, batchId | null, tags | null]` (sent by triggers, migration 0038).
   */
  runChanges: "svc_run_changes",
  /**
   * An environment id: an operator paused, resumed, overrode or reset one of its queues
   * (engine/queues/queue-controls.ts): its workers read again which queues they claim with a limit.
   */
  queuesChanged: "svc_queues_changed",
  /** An `.in` record was appended: `<sessionId> <seq>` (what runs in session.in.once listen for). */
  sessionIn: "svc_session_in",
  /** A chunk was appended to a run's stream: JSON `{ e, k: "<run>/<key>", s, io, seq, r? }` (engine/streams/chunks.ts). */
  runStreamRecords: "svc_run_stream_records",
  /** A chunk was sent to a run's input stream: `<run>/<key> <seq>` (what runs in `.once()`/`.on()` listen for). */
  runStreamIn: "svc_run_stream_in",
} as const;
