/**
 * How an execution came to this worker (worker events and attempt spans report it): an offer from
 * its trigger or completion, a resume claimed by id on NOTIFY (fast path), or a run claimed from
 * `runs` (claimed).
 */
export type Via = "offer" | "fast-path" | "claimed";
