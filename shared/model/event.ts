/**
 * The shapes every layer shares: what the engine, the journal, the transport and the services
 * pass to one another. Nothing here imports from above it.
 */
import type { EventStatus } from "./status.ts";

/** Why flow control holds an event back (docs/flow-control.md). */
export type HeldBy = "paused" | "rate" | "concurrency";

/** How the delay between attempts grows. Full jitter is always applied on top. */
export interface BackoffPolicy {
  readonly strategy: "exponential" | "fixed";
  /** First delay (exponential) or every delay (fixed), in ms. */
  readonly delayMs: number;
  /** Upper bound for one delay, in ms. */
  readonly maxDelayMs?: number | undefined;
}

/** URLs called with an event's final outcome (see callbacksSchema). */
export interface Callbacks {
  readonly onSuccess?: string | undefined;
  readonly onFailure?: string | undefined;
}

/** An event as accepted by the engine, after validation and before it is stored. */
export interface NewEvent {
  readonly tenant: string;
  readonly id: string;
  readonly type: string;
  readonly payload: unknown;
  /** Epoch ms. */
  readonly runAt: number;
  readonly maxAttempts?: number | undefined;
  readonly backoff?: BackoffPolicy | undefined;
  readonly callbacks?: Callbacks | undefined;
  /** A hash of what the client asked for; a repeat with another fingerprint is a conflict. */
  readonly fingerprint: string;
  readonly createdAt: number;
  /**
   * Hourglass made the id (the client sent none): no earlier event can carry it, so the journal
   * may write it without an existence check (see EventJournal.createMany).
   */
  readonly generatedId?: true | undefined;
}

/** What `get` and `list` return: the durable record overlaid with the index's live state. */
export interface EventView {
  readonly id: string;
  readonly type: string;
  readonly status: EventStatus;
  readonly runAt: number;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly lastError?: string | undefined;
  readonly payload: unknown;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Set while flow control holds the event back (its type is paused, or out of rate or slots). */
  readonly heldBy?: HeldBy | undefined;
}

export type ScheduleOutcome = "created" | "existing";

export interface ScheduleResult {
  readonly outcome: ScheduleOutcome;
  readonly event: EventView;
}
