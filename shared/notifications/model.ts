import { parseOccurrenceId } from "../model/occurrence-id.ts";
import type { EventStatus } from "../model/status.ts";

/** Every transition an event goes through, each published once when it applies. */
export const TRANSITIONS = [
  "scheduled",
  "rescheduled",
  "dispatched",
  "started",
  "succeeded",
  "retrying",
  "dead",
  "cancelled",
  "held",
] as const;

export type Transition = (typeof TRANSITIONS)[number];

/** Why flow control held an event back instead of dispatching or starting it. */
import type { HeldBy } from "../model/event.ts";

export type { HeldBy } from "../model/event.ts";

/** The status an event has right after each transition (`held` leaves it where it was). */
export const STATUS_AFTER: Readonly<Record<Transition, EventStatus>> = {
  scheduled: "scheduled",
  rescheduled: "scheduled",
  dispatched: "dispatched",
  started: "running",
  succeeded: "succeeded",
  retrying: "retrying",
  dead: "dead",
  cancelled: "cancelled",
  held: "scheduled",
};

/** One transition of one event, as the engine hands it to the notifier (times in epoch ms). */
export interface TransitionNotice {
  readonly transition: Transition;
  readonly tenant: string;
  readonly id: string;
  /**
   * The event's type. A transition point that does not have it at hand (the dispatcher's claim,
   * a reschedule) leaves it out, and the notifier looks it up in the index at flush time, off the
   * event's path.
   */
  type?: string;
  /** Attempts counted so far: 0 until the first start, then the number of the current attempt. */
  readonly attempt: number;
  readonly status: EventStatus;
  readonly time: number;
  /** The error of a failed attempt (retrying, dead). */
  readonly error?: string | undefined;
  /** When the event is (now) due: scheduled, rescheduled, retrying (the next attempt). */
  readonly runAt?: number | undefined;
  readonly heldBy?: HeldBy | undefined;
}

/** A notification as subscribers receive it: JSON, ISO-8601 times, and the schedule of an occurrence. */
export interface NotificationDetail {
  readonly transition: Transition;
  readonly id: string;
  readonly tenant: string;
  readonly type: string;
  readonly attempt: number;
  readonly status: EventStatus;
  readonly time: string;
  readonly error?: string;
  readonly runAt?: string;
  readonly heldBy?: HeldBy;
  /** Set when the event is an occurrence of a recurring schedule. */
  readonly scheduleId?: string;
}

export function detailOf(notice: TransitionNotice): NotificationDetail {
  const occurrence = parseOccurrenceId(notice.id);
  return {
    transition: notice.transition,
    id: notice.id,
    tenant: notice.tenant,
    type: notice.type ?? "",
    attempt: notice.attempt,
    status: notice.status,
    time: new Date(notice.time).toISOString(),
    ...(notice.error !== undefined && { error: notice.error }),
    ...(notice.runAt !== undefined && { runAt: new Date(notice.runAt).toISOString() }),
    ...(notice.heldBy !== undefined && { heldBy: notice.heldBy }),
    ...(occurrence && { scheduleId: occurrence.scheduleId }),
  };
}
