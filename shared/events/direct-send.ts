import { ScriptCode } from "../engine/codes.ts";
import { memberOf } from "../engine/keys.ts";
import { type JournalItem, journalKey, TERMINAL_STATUSES } from "../journal/item.ts";
import type { EventJournal } from "../journal/journal.ts";
import type { NewEvent } from "../model/event.ts";
import type { EngineDeps } from "./deps.ts";
import { evictIfFar } from "./horizon.ts";
import { indexRunAt } from "./run-at.ts";

/** What a create does with an event its index write leased for a direct send. */
export type DirectSend =
  /** Send it as leased (gen 1, the create's own time). */
  | { readonly send: "as-created" }
  /** Send it with the gen, attempt and time the sync to the journal gave it. */
  | {
      readonly send: "synced";
      readonly gen: number;
      readonly attempt: number;
      readonly runAt: number;
      readonly item: JournalItem;
    }
  /** Do not send: the journal moved on (a later time, a cancel, a finish); `item` is where it is. */
  | { readonly send: "no"; readonly item: JournalItem | undefined };

/** A journal item a call other than its create has already changed (rescheduled, retried, ended). */
export function movedOn(item: JournalItem): boolean {
  return item.status !== "scheduled" || (item.version ?? 0) > 0 || item.attempts > 0;
}

/**
 * Checks against the journal, read strongly consistent after the index write, the events a create
 * leased for a direct send, before they are sent. The index entry was written from the create's
 * input, not from the journal, and only an entry it found (EXISTS) made it look: anything that
 * changed the journal item between the create's two writes while leaving no entry behind went
 * unseen. A reschedule to a far time (its restore writes nothing), a FLUSHALL after a reschedule's
 * restore, a racing reschedule whose event ran and left the index, a cancel whose tombstone was
 * pruned: the create answered DISPATCHED gen 1 and sent the event at its old time, early, or
 * again (docs/reliability.md, finding 6). start.lua never reads the journal's time; the dispatcher's
 * claim does, and this is the same check for the one path that skipped it.
 *
 * An event whose id Hourglass generated is sent as created without a read: no other call can name
 * it before the create answers. For a client's id the read is one RRU (an item under 4 KB), the
 * same as the dispatcher's read of an event it sends, which a directly sent event skips.
 * - unchanged (version 0, scheduled, the create's time): sent as created;
 * - final: its entry leaves the index, nothing is sent;
 * - moved on: the entry is synced to the journal's time and version (reschedule.lua, which bumps
 *   the gen); sent with the new gen if due within `dispatchUntil`, else it waits in `due` (evicted
 *   to the journal if far). A sync the index refuses as STALE (a reschedule's index write came
 *   after the create's, its journal write is still on its way) or CONFLICT leaves the entry to
 *   that call and to the lease's expiry.
 */
export async function checkDirectSends(
  deps: Pick<EngineDeps, "index" | "config" | "logger">,
  journal: EventJournal,
  events: readonly NewEvent[],
  now: number,
  dispatchUntil: number,
): Promise<DirectSend[]> {
  const { index, config } = deps;
  const keyOf = (event: NewEvent) => journalKey(event.tenant, event.id);
  const toRead = events.filter((event) => event.generatedId !== true);
  const items = toRead.length > 0 ? await journal.getMany(toRead.map(keyOf)) : new Map<string, JournalItem>();
  const sends: DirectSend[] = [];
  let held = 0;
  for (const event of events) {
    if (event.generatedId === true) {
      sends.push({ send: "as-created" });
      continue;
    }
    const item = items.get(keyOf(event));
    const member = memberOf(event.tenant, event.id);
    if (item && !movedOn(item) && indexRunAt(item.runAt) === event.runAt) {
      sends.push({ send: "as-created" });
      continue;
    }
    held++;
    sends.push(await sync(member, item));
  }
  if (held > 0) deps.logger.warn("direct sends held back: the journal moved on", { count: held });
  return sends;

  async function sync(member: string, item: JournalItem | undefined): Promise<DirectSend> {
    // No item under an id the journal has just created: left leased, the dispatcher judges it.
    if (!item) return { send: "no", item };
    if (TERMINAL_STATUSES.includes(item.status)) {
      await index.forget(member, item.status as "succeeded" | "cancelled" | "dead");
      return { send: "no", item };
    }
    const runAt = indexRunAt(item.runAt);
    const synced = await index.reschedule(
      member,
      runAt,
      now,
      dispatchUntil,
      config.dispatchLeaseMs,
      item.version ?? 0,
    );
    if (synced.code === ScriptCode.DISPATCHED)
      return { send: "synced", gen: synced.gen, attempt: synced.attempt, runAt, item };
    if (synced.code === ScriptCode.SCHEDULED)
      await evictIfFar(index, member, synced.version, runAt, now, config);
    return { send: "no", item };
  }
}
