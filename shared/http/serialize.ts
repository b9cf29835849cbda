import type { EventView } from "../model/event.ts";
import { parseOccurrenceId } from "../model/occurrence-id.ts";

/** The API's event shape: ISO-8601 UTC times outside, epoch ms inside. */
export function serializeEvent(view: EventView) {
  return {
    id: view.id,
    type: view.type,
    status: view.status,
    runAt: new Date(view.runAt).toISOString(),
    attempts: view.attempts,
    maxAttempts: view.maxAttempts,
    ...(view.lastError !== undefined && { lastError: view.lastError }),
    payload: view.payload,
    createdAt: new Date(view.createdAt).toISOString(),
    updatedAt: new Date(view.updatedAt).toISOString(),
    ...(view.heldBy && { heldBy: view.heldBy }),
    ...occurrenceOf(view.id),
  };
}

/** A recurring schedule's occurrence names its schedule and instant in its id. */
function occurrenceOf(id: string) {
  const ref = parseOccurrenceId(id);
  return ref && { scheduleId: ref.scheduleId, occurrenceAt: new Date(ref.occurrenceAt).toISOString() };
}

export type SerializedEvent = ReturnType<typeof serializeEvent>;
