import pMap from "p-map";
import { EventNotFoundError, EventStateConflictError } from "../events/errors.ts";
import type { EventService } from "../events/service.ts";
import { fingerprintOf } from "../events/validate.ts";
import type { NewEvent } from "../model/event.ts";
import { jitterMs, occurrenceId } from "../model/occurrence-id.ts";
import { between, evaluator } from "./evaluate.ts";
import { type ScheduleItem, specOf } from "./model.ts";

/** At most this many occurrences are cancelled for one pause, edit or delete. */
const CANCEL_CAP = 2_000;
const CANCEL_PARALLEL = 16;

/** The event an occurrence is: an ordinary event whose id names the schedule, its incarnation, revision and instant. */
export function occurrenceEvent(item: ScheduleItem, instant: number, now: number): NewEvent {
  const id = occurrenceId(item, instant);
  const runAt = instant + jitterMs(id, item.jitterSeconds);
  return {
    tenant: item.tenant,
    id,
    type: item.type,
    payload: JSON.parse(item.payload) as unknown,
    runAt,
    maxAttempts: item.maxAttempts,
    backoff: item.backoff,
    ...(item.callbacks && { callbacks: item.callbacks }),
    // Every dispatcher derives the same event for the same instant, so a repeat is "existing", never a conflict.
    fingerprint: fingerprintOf([
      item.revision,
      item.type,
      item.payload,
      runAt,
      item.maxAttempts,
      item.backoff,
      // Only when set, so occurrences of schedules without callbacks keep their fingerprints.
      ...(item.callbacks ? [item.callbacks] : []),
    ]),
    createdAt: now,
  };
}

/** True when the event has finished for good (or expired from the journal): it can never run again. */
export async function isFinished(events: EventService, tenant: string, id: string): Promise<boolean> {
  try {
    const view = await events.get(tenant, id);
    return view.status === "succeeded" || view.status === "dead" || view.status === "cancelled";
  } catch (error) {
    if (error instanceof EventNotFoundError) return true;
    throw error;
  }
}

/** Cancels the given occurrence events that have not started; gone or started ones are left alone. */
export async function cancelEvents(
  events: EventService,
  tenant: string,
  ids: readonly string[],
): Promise<number> {
  let cancelled = 0;
  await pMap(
    ids,
    async (id) => {
      try {
        const view = await events.cancel(tenant, id);
        if (view.status === "cancelled") cancelled++;
      } catch (error) {
        if (!(error instanceof EventNotFoundError || error instanceof EventStateConflictError)) throw error;
      }
    },
    { concurrency: CANCEL_PARALLEL },
  );
  return cancelled;
}

/**
 * Cancels the unstarted occurrences of a schedule as it stood (its revision): every instant from
 * the start of its latest materialization (catch-up occurrences can be in the past) or `lookbackMs`
 * ago, to `reachMs` past its next occurrence or now, which is beyond what any dispatcher could have
 * materialized. Instants that never became events are simply not found.
 */
export async function cancelOccurrences(
  events: EventService,
  item: ScheduleItem,
  now: number,
  window: { lookbackMs: number; reachMs: number },
): Promise<number> {
  const from = Math.min(item.windowStart ?? now, now - window.lookbackMs);
  const to = Math.max(item.nextAt ?? now, now) + window.reachMs;
  const instants = between(evaluator(specOf(item)), from, to, CANCEL_CAP);
  return cancelEvents(
    events,
    item.tenant,
    instants.map((t) => occurrenceId(item, t)),
  );
}
