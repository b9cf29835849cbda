import type { BackoffPolicy, Callbacks, NewEvent } from "../model/event.ts";
import type { EventStatus } from "../model/status.ts";
import { packPayload, unpackPayload } from "./payload.ts";

/** Journal statuses: the live statuses `dispatched` and `running` exist only in the index. */
export type JournalStatus = Extract<
  EventStatus,
  "scheduled" | "retrying" | "succeeded" | "dead" | "cancelled"
>;

export const PENDING_STATUSES: readonly JournalStatus[] = ["scheduled", "retrying"];
export const TERMINAL_STATUSES: readonly JournalStatus[] = ["succeeded", "dead", "cancelled"];

/** One event as DynamoDB stores it. */
export interface JournalItem {
  readonly pk: string;
  readonly tenant: string;
  readonly id: string;
  readonly type: string;
  /**
   * JSON text, so any JSON value round-trips exactly. Absent when the payload is stored compressed
   * in `payloadz` instead (see payload.ts); read it through `payloadJsonOf`.
   */
  readonly payload?: string;
  /** The payload's JSON text, brotli-compressed: larger payloads, so the item stays under 1 KB. */
  readonly payloadz?: Uint8Array;
  readonly runAt: number;
  readonly status: JournalStatus;
  readonly attempts: number;
  readonly maxAttempts?: number;
  readonly backoff?: BackoffPolicy;
  readonly callbacks?: Callbacks;
  readonly fingerprint: string;
  /**
   * Goes up with every reschedule, and the index carries it (see reschedule.lua), so the two agree
   * on which time is the newer one. Absent on items never rescheduled (version 0).
   */
  readonly version?: number;
  readonly lastError?: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly finishedAt?: number;
  readonly ckey: string;
  /** Present only while pending: the sparse `pending` index. */
  readonly pshard?: string;
  readonly pdue?: number;
  /** Present only while dead: the sparse `dead` index. */
  readonly dtenant?: string;
  readonly dkey?: string;
  /** Epoch seconds; DynamoDB deletes the item after it. Set once the event is finished. */
  readonly ttl?: number;
}

export function journalKey(tenant: string, id: string): string {
  return `${tenant}#${id}`;
}

/** Sorts by creation time, then id; zero-padded so string order is time order. */
export function creationKey(createdAt: number, id: string): string {
  return `${String(createdAt).padStart(15, "0")}#${id}`;
}

export function toJournalItem(event: NewEvent, shard: number): JournalItem {
  return {
    pk: journalKey(event.tenant, event.id),
    tenant: event.tenant,
    id: event.id,
    type: event.type,
    ...packPayload(JSON.stringify(event.payload)),
    runAt: event.runAt,
    status: "scheduled",
    attempts: 0,
    ...(event.maxAttempts !== undefined && { maxAttempts: event.maxAttempts }),
    ...(event.backoff !== undefined && { backoff: event.backoff }),
    ...(event.callbacks !== undefined && { callbacks: event.callbacks }),
    fingerprint: event.fingerprint,
    createdAt: event.createdAt,
    updatedAt: event.createdAt,
    ckey: creationKey(event.createdAt, event.id),
    pshard: String(shard),
    pdue: event.runAt,
  };
}

/** The payload's JSON text, whichever way the item stores it. */
export function payloadJsonOf(item: Pick<JournalItem, "payload" | "payloadz">): string {
  return unpackPayload(item);
}
