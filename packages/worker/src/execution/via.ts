/**
 * How an execution came to this worker (worker events and attempt spans report it): an offer from
 * its trigger or completion, a resume claimed on NOTIFY (fast path), a run claimed from `runs`
 * (queued), or a pg-boss job.
 */
export type Via = "offer" | "fast-path" | "job" | "queued";
