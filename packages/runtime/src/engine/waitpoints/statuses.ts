/** Waitpoint statuses: a token starts WAITING and ends COMPLETED or TIMED_OUT, once. */
export const WAITPOINT_STATUSES = ["WAITING", "COMPLETED", "TIMED_OUT"] as const;
export type WaitpointStatus = (typeof WAITPOINT_STATUSES)[number];

export const WAITPOINT_TRANSITIONS: Readonly<Record<WaitpointStatus, readonly WaitpointStatus[]>> = {
  WAITING: ["COMPLETED", "TIMED_OUT"],
  COMPLETED: [],
  TIMED_OUT: [],
};

export const WAITPOINT_TYPES = ["MANUAL", "DATETIME", "RUN", "BATCH", "SESSION"] as const;
export type WaitpointType = (typeof WAITPOINT_TYPES)[number];

export function isWaitpointStatus(value: string): value is WaitpointStatus {
  return (WAITPOINT_STATUSES as readonly string[]).includes(value);
}
