/** Statuses as the index stores them. The journal adds `succeeded` and `cancelled`. */
export type LiveStatus = "scheduled" | "dispatched" | "running" | "retrying" | "dead";
export type EventStatus = LiveStatus | "succeeded" | "cancelled";

export const EVENT_STATUSES: readonly EventStatus[] = [
  "scheduled",
  "dispatched",
  "running",
  "succeeded",
  "retrying",
  "dead",
  "cancelled",
];
