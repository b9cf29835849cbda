import type { EventStatus } from "../engine/codes.ts";
import type { HeldBy } from "../limits/model.ts";

export type { EventStatus } from "../engine/codes.ts";

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

/** The message a dispatcher sends and a worker receives. Small on purpose: the body stays in Redis. */
export interface DispatchMessage {
  /** `tenant/id`. */
  readonly member: string;
  readonly shard: number;
  readonly gen: number;
  /** Epoch ms; the worker never starts the handler before it. */
  readonly runAt: number;
  /** Attempts made before this dispatch. */
  readonly attempt: number;
  /**
   * The payload as JSON text, when the sender had it at hand and it is small enough: the worker
   * then starts the handler without reading the journal first. Absent: the worker reads it.
   */
  readonly payload?: string | undefined;
}

/**
 * Payloads up to this many UTF-8 bytes ride in the queue message (SQS's limit is 256 KiB for the
 * whole message, counted in bytes: a payload of 200,000 non-ASCII characters can be 600 KB).
 */
export const INLINE_PAYLOAD_LIMIT = 200_000;

/** The payload JSON to put in a message, or undefined when it is too big and the worker reads it. */
export function inlinePayload(payloadJson: string): string | undefined {
  // Cheap bound first: a string's UTF-8 size is at most three bytes per UTF-16 unit.
  if (payloadJson.length * 3 <= INLINE_PAYLOAD_LIMIT) return payloadJson;
  return Buffer.byteLength(payloadJson, "utf8") <= INLINE_PAYLOAD_LIMIT ? payloadJson : undefined;
}

export type ScheduleOutcome = "created" | "existing";

export interface ScheduleResult {
  readonly outcome: ScheduleOutcome;
  readonly event: EventView;
}
