import { decodeBody } from "../engine/body.ts";
import { ScriptCode } from "../engine/codes.ts";
import { parseMember } from "../engine/keys.ts";
import type { LiveState } from "../engine/redis-index.ts";
import { type JournalItem, journalKey, PENDING_STATUSES } from "../journal/item.ts";
import type { EventJournal } from "../journal/journal.ts";
import type { EngineDeps } from "./deps.ts";
import { movedOn } from "./direct-send.ts";
import { restoreEntryOf } from "./entries.ts";
import { indexRunAt } from "./run-at.ts";

/**
 * Settles index entries found (EXISTS) under ids the journal has just created. Such an entry is
 * one of two things, and only the journal, read strongly consistent now, can tell which:
 * - the new event's own entry, written from the journal by a call that ran between the create's
 *   journal write and its index write (a reschedule that found no entry and restored it at its
 *   new time, the recovery sweep, the horizon loader), and perhaps since claimed or started: it
 *   agrees with the journal's current item, and is left as it is;
 * - a leftover of an older event under the same id, whose journal item expired after its
 *   retention (or a crash left it): it does not agree, and is replaced by the journal's current
 *   item (its runAt, attempts and version), never by the create's input, which a reschedule may
 *   already have overtaken (docs/reliability.md, finding 6).
 * A replacement is restored, not dispatched: the dispatcher's claim reads the journal again
 * before it sends (moving the entry to a later journal time, dropping a finished one), so no
 * interleaving with a reschedule, a cancel or a finish runs it early or again. A journal item
 * already final (a cancel or a run got there first) takes its entry out of the index.
 * An entry whose version is ahead of the journal's (same type, not dead) agrees too: a reschedule
 * writes the index first and the journal after, and one between those writes must not be undone
 * by a restore at the journal's older time; the dispatcher's claim applies the same rule (the
 * index ahead wins, and the journal is brought to it).
 * Returns one outcome per member: the code (the restore's, or SCHEDULED when the entry was left
 * or dropped) and, when another call had already changed the journal item, that item, for the
 * create to answer with.
 */
export async function settleExisting(
  deps: Pick<EngineDeps, "index" | "logger">,
  journal: EventJournal,
  members: readonly string[],
  now: number,
  nearMs: number | undefined,
): Promise<{ code: ScriptCode; moved?: JournalItem }[]> {
  const { index } = deps;
  const keyOf = (member: string) => {
    const { tenant, id } = parseMember(member);
    return journalKey(tenant, id);
  };
  const items = await journal.getMany(members.map(keyOf));
  const codes: { code: ScriptCode; moved?: JournalItem }[] = [];
  let replaced = 0;
  for (const member of members) {
    const item = items.get(keyOf(member));
    if (!item) {
      codes.push({ code: ScriptCode.EXISTS });
      continue;
    }
    const moved = movedOn(item) ? { moved: item } : {};
    if (!PENDING_STATUSES.includes(item.status)) {
      await index.forget(member, item.status as "succeeded" | "cancelled" | "dead");
      codes.push({ code: ScriptCode.SCHEDULED, ...moved });
      continue;
    }
    const live = await index.inspect(member);
    if (live && agrees(live, item)) {
      codes.push({ code: ScriptCode.SCHEDULED, ...moved });
      continue;
    }
    await index.forget(member, undefined);
    const [restored] = await index.restore([restoreEntryOf(item)], now, { nearMs });
    codes.push({ code: restored!, ...moved });
    replaced++;
  }
  if (replaced > 0) deps.logger.warn("replaced stale index entries under reused ids", { count: replaced });
  return codes;
}

/**
 * Whether an index entry is the journal item's own: same type, not dead, and either the same time
 * and version or a newer version (a reschedule's index write whose journal write is on its way).
 */
function agrees(live: LiveState, item: JournalItem): boolean {
  const body = decodeBody(live.body);
  if (live.status === "dead" || body.type !== item.type || body.maxAttempts !== item.maxAttempts)
    return false;
  const version = item.version ?? 0;
  return live.version > version || (live.version === version && live.runAt === indexRunAt(item.runAt));
}
