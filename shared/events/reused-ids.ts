import { decodeBody } from "../engine/body.ts";
import { ScriptCode } from "../engine/codes.ts";
import { parseMember } from "../engine/keys.ts";
import type { LiveState } from "../engine/redis-index.ts";
import { type JournalItem, journalKey, PENDING_STATUSES } from "../journal/item.ts";
import type { EventJournal } from "../journal/journal.ts";
import type { EngineDeps } from "./deps.ts";
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
 * Returns one code per member: the restore's, or SCHEDULED when the entry was left or dropped.
 */
export async function settleExisting(
  deps: Pick<EngineDeps, "index" | "logger">,
  journal: EventJournal,
  members: readonly string[],
  now: number,
  nearMs: number | undefined,
): Promise<ScriptCode[]> {
  const { index } = deps;
  const keyOf = (member: string) => {
    const { tenant, id } = parseMember(member);
    return journalKey(tenant, id);
  };
  const items = await journal.getMany(members.map(keyOf));
  const codes: ScriptCode[] = [];
  let replaced = 0;
  for (const member of members) {
    const item = items.get(keyOf(member));
    if (!item) {
      codes.push(ScriptCode.EXISTS);
      continue;
    }
    if (!PENDING_STATUSES.includes(item.status)) {
      await index.forget(member, item.status as "succeeded" | "cancelled" | "dead");
      codes.push(ScriptCode.SCHEDULED);
      continue;
    }
    const live = await index.inspect(member);
    if (live && agrees(live, item)) {
      codes.push(ScriptCode.SCHEDULED);
      continue;
    }
    await index.forget(member, undefined);
    const [restored] = await index.restore([restoreEntryOf(item)], now, { nearMs });
    codes.push(restored!);
    replaced++;
  }
  if (replaced > 0) deps.logger.warn("replaced stale index entries under reused ids", { count: replaced });
  return codes;
}

/** Whether an index entry is the journal item's own: same type, time and version, not dead. */
function agrees(live: LiveState, item: JournalItem): boolean {
  const body = decodeBody(live.body);
  return (
    live.status !== "dead" &&
    body.type === item.type &&
    body.maxAttempts === item.maxAttempts &&
    live.runAt === indexRunAt(item.runAt) &&
    live.version === (item.version ?? 0)
  );
}
