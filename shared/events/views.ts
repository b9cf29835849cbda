import { decodeBody } from "../engine/body.ts";
import type { LiveState } from "../engine/redis-index.ts";
import { type JournalItem, payloadJsonOf } from "../journal/item.ts";
import type { EventView, NewEvent } from "../model/event.ts";

/**
 * What a client is shown of an event, from whichever record holds it: the journal item, the
 * journal item with the index's live state laid over it, the index alone (engine-only mode), or a
 * create just accepted.
 */

/** The journal's view of an event: its durable state, without the index's live status. */
export function viewOf(item: JournalItem, defaultMaxAttempts: number): EventView {
  return {
    id: item.id,
    type: item.type,
    status: item.status,
    runAt: item.runAt,
    attempts: item.attempts,
    maxAttempts: item.maxAttempts ?? defaultMaxAttempts,
    lastError: item.lastError,
    payload: JSON.parse(payloadJsonOf(item)) as unknown,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
  };
}

/**
 * The journal's view, with the index's live status, attempt and time laid over it. A finished
 * event is final in the journal; an index entry that still says otherwise is a leftover of a crash
 * between the two writes (the dispatcher removes it when its lease runs out), so it is ignored.
 */
export function overlay(view: EventView, live: LiveState | undefined): EventView {
  if (!live || view.status === "succeeded" || view.status === "dead" || view.status === "cancelled")
    return view;
  return {
    ...view,
    status: live.status,
    attempts: live.attempt,
    runAt: live.runAt,
    ...(live.heldBy && { heldBy: live.heldBy }),
  };
}

/** A view built from the index alone (engine-only mode). */
export function viewFromIndex(id: string, live: LiveState, defaultMaxAttempts: number): EventView {
  // Only used without a journal, where the payload is always inline.
  const body = decodeBody(live.body);
  return {
    id,
    type: body.type,
    status: live.status,
    runAt: live.runAt,
    attempts: live.attempt,
    maxAttempts: body.maxAttempts ?? defaultMaxAttempts,
    payload: body.payload,
    createdAt: 0,
    updatedAt: 0,
    ...(live.heldBy && { heldBy: live.heldBy }),
  };
}

/** The view of an event just created: scheduled, with no attempt made. */
export function createdViewOf(event: NewEvent, defaultMaxAttempts: number): EventView {
  return {
    id: event.id,
    type: event.type,
    status: "scheduled",
    runAt: event.runAt,
    attempts: 0,
    maxAttempts: event.maxAttempts ?? defaultMaxAttempts,
    payload: event.payload,
    createdAt: event.createdAt,
    updatedAt: event.createdAt,
  };
}
